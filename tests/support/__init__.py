"""Support code for the project's own tests (synthetic results, a headless browser): not part of wincon."""
