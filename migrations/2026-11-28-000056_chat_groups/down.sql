DROP TABLE chat_group_messages;
DROP TABLE chat_group_join_requests;
DROP TABLE chat_group_participants;
DROP TABLE chat_groups;
