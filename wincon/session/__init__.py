"""The pytest session the plugin (``wincon.plugin``) drives: the run's context, options and markers, fixtures,
collection, scheduling, Linux controls, reports and verdicts.
"""
