"""`consort mcp`: Consort's tools for the user's coding agent, over stdio (the official MCP SDK).

It reads the project and makes paired branches; it never approves, rejects, retries or amends:
those decisions stay a person's.
"""
