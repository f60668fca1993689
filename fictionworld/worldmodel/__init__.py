"""The LLM world model: pages and result lists written by an LLM served by SGLang, grounded in
the graph and verified against it before an agent sees them."""
