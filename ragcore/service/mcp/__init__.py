"""ragcore as a tool for agents: the Model Context Protocol server (official ``mcp`` SDK, the
``[mcp]`` extra). ``tools.py`` is what the tools do (transport-free), ``outputs.py`` what they
return (ids and locators an agent can cite), ``server.py`` the MCP server over them, ``http.py``
its mount at ``/mcp`` on ``ragcore serve`` and ``stdio.py`` ``ragcore mcp``. Nothing here is
imported by ``ragcore`` itself: without the extra, ``ragcore`` works as before."""
