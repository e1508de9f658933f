"""Test helpers that are part of the package: an OpenAI-compatible server on loopback that
answers like a chosen model family (`openai_server`)."""
