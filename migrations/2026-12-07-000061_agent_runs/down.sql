DROP TABLE agent_steps;
DROP TABLE agent_runs;
