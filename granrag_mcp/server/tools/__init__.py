"""The tools, one module per group (search, context, library, graph, write), each with a `register(server, budget)`;
`base` adds a read-only tool, `presenting` turns the core's answers into results, `session_search` is what every
search tool does around its technique."""
