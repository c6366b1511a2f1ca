"""The Gemini API (generateContent, streamGenerateContent) as a guarded protocol (``protocol``)."""
