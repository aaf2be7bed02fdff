DROP TABLE mcp_connections;
