"""Run results: the TestGrid layout, JUnit, Allure labels, publishing, the dashboard and the release gate.

One run writes one results directory (``started.json``, ``finished.json``, ``artifacts/junit_*.xml``,
``artifacts/profile.json``, ``build-log.txt``, ``allure-results/``). Everything else here reads that
directory: ``wincon dashboard``, ``wincon gate``, ``wincon publish`` and ``wincon report``.
See docs/results.md.
"""
