"""The TUI's views: small widgets that take data as attributes and post messages up."""
