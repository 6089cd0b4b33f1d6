"""Security tests: hostile input against real servers on 127.0.0.1."""
