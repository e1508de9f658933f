"""Test helpers that are part of the package: OpenAI-compatible servers on loopback that
answer like a grounding model family (`openai_server`) or like a computer-use model
driven by a policy (`cua_server`, `policies`)."""
