"""The bundle viewer behind ``agentkernel-kb view``: data, safe markdown, one HTML page."""
