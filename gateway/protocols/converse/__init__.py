"""Amazon Bedrock's Converse API (``converse``, ``converse-stream``) as a guarded protocol (``protocol``)."""
