"""Fixtures of the scheduling suite."""

from __future__ import annotations

from wincon.checks import fixtures as shared

# Shared fixtures (wincon/checks/fixtures.py): a namespace per test, and the Windows build to pin to.
namespace = shared.namespace
build = shared.build
