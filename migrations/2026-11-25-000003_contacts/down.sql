DROP TABLE contacts;
DROP TABLE contact_groups;
