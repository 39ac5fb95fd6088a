/**
 * The long-poll vocabulary as the platform documents it: the chat REST API's "Chat REST API
 * Messages Response Objects" and "Response Bodies for Chat REST API" pages list each `type` and the
 * properties of its `message`. These example bodies are built from those property tables (values
 * are made up; names and kinds are the documentation's). Both the gateway's reading
 * (chat-messages.test.ts) and the simulator's speech (test/sandbox/messaging-simulator.test.ts)
 * are pinned to them.
 */
export const DOCUMENTED_FIELDS: Record<string, readonly string[]> = {
  ChatRequestSuccess: ['queuePosition', 'estimatedWaitTime', 'geoEnabled', 'url', 'oref', 'postChatUrl', 'customDetails', 'visitorId'],
  ChatRequestFail: ['reason', 'postChatUrl'],
  QueueUpdate: ['position', 'estimatedWaitTime'],
  ChatEstablished: ['name', 'userId', 'sneakPeekEnabled', 'chasitorIdleTimeout'],
  ChatTransferred: ['name', 'userId', 'sneakPeekEnabled', 'chasitorIdleTimeout'],
  ChatMessage: ['name', 'text', 'schedule', 'agentId'],
  AgentTyping: [],
  AgentNotTyping: [],
  AgentDisconnect: [],
  ChatEnded: ['reason', 'attachedRecords'],
  ChasitorIdleTimeoutWarningEvent: ['idleTimeoutWarningEvent'],
  FileTransfer: ['type', 'uploadServletUrl', 'fileToken', 'cdmServletUrl'],
  CustomEvent: ['type', 'data'],
};

export const DOCUMENTED_EXAMPLES = {
  ChatRequestSuccess: { queuePosition: 2, estimatedWaitTime: 120 },
  ChatRequestFail: { reason: 'Unavailable', postChatUrl: 'https://example.test/post-chat' },
  QueueUpdate: { position: 1, estimatedWaitTime: 45 },
  ChatEstablished: { name: 'Andy L.', userId: '005B0000000F3b2', sneakPeekEnabled: true, chasitorIdleTimeout: { isEnabled: false } },
  ChatTransferred: { name: 'Bea M.', userId: '005B0000000F3c9', sneakPeekEnabled: false },
  ChatMessage: { name: 'Andy L.', text: 'Hello, how can I help?', agentId: '005B0000000F3b2', schedule: { responseDelayMilliseconds: 0 } },
  AgentTyping: {},
  AgentNotTyping: {},
  AgentDisconnect: {},
  ChatEnded: { reason: 'agent', attachedRecords: ['500B0000003wMgd'] },
  ChasitorIdleTimeoutWarningEvent: { idleTimeoutWarningEvent: 'triggered' },
  FileTransfer: { type: 'Requested' },
  CustomEvent: { type: 'survey', data: 'rated 5' },
} as const satisfies Record<string, Record<string, unknown>>;
