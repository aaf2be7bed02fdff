-- An incoming message a provider sends twice (its retry racing the first) is stored once.
CREATE UNIQUE INDEX messages_inbound_once ON messages (tenant_channel_id, gateway_message_id)
    WHERE direction = 'inbound' AND gateway_message_id IS NOT NULL;
