DROP TABLE data_files;
DROP TABLE data_indexes;
DROP TABLE data_record_history;
DROP TABLE data_record_keys;
DROP TABLE data_records;
DROP TABLE data_tables;
DROP TABLE data_groups;
