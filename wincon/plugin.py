"""The wincon pytest plugin (being written: options, markers, profile, limitations)."""
