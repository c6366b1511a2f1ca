"""Google Vertex AI: Gemini (``vertex_gemini``) and Anthropic's models (``vertex_anthropic``) on
Google Cloud, served under ``/vertex``, their bodies read by the gemini and anthropic packages."""
