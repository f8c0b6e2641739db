"""Check helpers the suites share: API rules as data, controller history, scheduling observations."""
