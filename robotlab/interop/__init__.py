"""The crew served over other protocols: each live robot as an MCP tool (``robotlab mcp-serve``)
or an A2A agent (``robotlab a2a-serve``)."""
