"""In-repo runs load the wincon plugin through its pytest11 entry point; nothing else lives here."""
