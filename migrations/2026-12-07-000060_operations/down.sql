DROP TABLE operation_runs;
DROP TABLE operations;
