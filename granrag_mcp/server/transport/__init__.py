"""How the server is reached: stdio behind `stdio_relay`, or streamable HTTP (`http`) behind `http_guard`."""
