"""Model calls from a node: the chat call, tool loop, validated replies, request settings."""
