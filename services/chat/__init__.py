"""The chat service: conversations, personas, settings, and a streamed, cited answer per turn."""
