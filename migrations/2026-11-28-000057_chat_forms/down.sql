DROP TABLE chat_form_answers;
DROP TABLE chat_form_sends;
DROP TABLE chat_form_flows;
DROP TABLE chat_form_accounts;
DROP TABLE chat_form_versions;
DROP TABLE chat_forms;
