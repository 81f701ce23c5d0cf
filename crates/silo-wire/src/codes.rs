//! Request and response codes (docs/protocol.md §1.5, §1.7, §2.1).

/// Request codes.
pub mod request {
    pub const SEND_MESSAGE: i32 = 10;
    pub const PULL_MESSAGE: i32 = 11;
    pub const QUERY_MESSAGE: i32 = 12;
    pub const QUERY_CONSUMER_OFFSET: i32 = 14;
    pub const UPDATE_CONSUMER_OFFSET: i32 = 15;
    pub const UPDATE_AND_CREATE_TOPIC: i32 = 17;
    pub const GET_ALL_TOPIC_CONFIG: i32 = 21;
    pub const GET_BROKER_RUNTIME_INFO: i32 = 28;
    /// GET_ALL_CONSUMER_OFFSET: `consumerOffset.json`'s content (a slave's copy).
    pub const GET_ALL_CONSUMER_OFFSET: i32 = 43;
    /// GET_ALL_DELAY_OFFSET: `delayOffset.json`'s content (a slave's copy).
    pub const GET_ALL_DELAY_OFFSET: i32 = 45;
    /// GET_TIMER_CHECK_POINT: the timer checkpoint's 56 bytes (a slave asks every 3 s).
    pub const GET_TIMER_CHECK_POINT: i32 = 60;
    /// GET_TIMER_METRICS: the timer metrics (`timermetrics`), JSON (a slave's copy).
    pub const GET_TIMER_METRICS: i32 = 61;
    pub const SEARCH_OFFSET_BY_TIMESTAMP: i32 = 29;
    pub const GET_MAX_OFFSET: i32 = 30;
    pub const GET_MIN_OFFSET: i32 = 31;
    pub const GET_EARLIEST_MSG_STORETIME: i32 = 32;
    pub const VIEW_MESSAGE_BY_ID: i32 = 33;
    pub const HEART_BEAT: i32 = 34;
    pub const UNREGISTER_CLIENT: i32 = 35;
    pub const CONSUMER_SEND_MSG_BACK: i32 = 36;
    pub const END_TRANSACTION: i32 = 37;
    /// CHECK_TRANSACTION_STATE: the broker asks a producer how a transaction ended.
    pub const CHECK_TRANSACTION_STATE: i32 = 39;
    pub const GET_CONSUMER_LIST_BY_GROUP: i32 = 38;
    pub const NOTIFY_CONSUMER_IDS_CHANGED: i32 = 40;
    pub const LOCK_BATCH_MQ: i32 = 41;
    pub const UNLOCK_BATCH_MQ: i32 = 42;
    pub const CHECK_CLIENT_CONFIG: i32 = 46;
    pub const PUT_KV_CONFIG: i32 = 100;
    pub const GET_KV_CONFIG: i32 = 101;
    pub const DELETE_KV_CONFIG: i32 = 102;
    pub const REGISTER_BROKER: i32 = 103;
    pub const UNREGISTER_BROKER: i32 = 104;
    pub const GET_ROUTEINFO_BY_TOPIC: i32 = 105;
    pub const GET_BROKER_CLUSTER_INFO: i32 = 106;
    /// GET_TOPIC_STATS_INFO: min/max offset and last store time per queue of a topic.
    pub const GET_TOPIC_STATS_INFO: i32 = 202;
    /// GET_CONSUMER_CONNECTION_LIST: an online group's clients and subscriptions.
    pub const GET_CONSUMER_CONNECTION_LIST: i32 = 203;
    pub const GET_ALL_TOPIC_LIST_FROM_NAMESERVER: i32 = 206;
    /// GET_CONSUME_STATS: a consumer group's progress per queue.
    pub const GET_CONSUME_STATS: i32 = 208;
    /// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: body a SubscriptionGroupConfig.
    pub const UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: i32 = 200;
    /// GET_ALL_SUBSCRIPTIONGROUP_CONFIG: the `subscriptionGroup.json` content.
    pub const GET_ALL_SUBSCRIPTIONGROUP_CONFIG: i32 = 201;
    /// DELETE_SUBSCRIPTIONGROUP: header `groupName`, optional `cleanOffset`.
    pub const DELETE_SUBSCRIPTIONGROUP: i32 = 207;
    pub const DELETE_TOPIC_IN_BROKER: i32 = 215;
    /// DELETE_TOPIC_IN_NAMESRV: sent by admin tools after deleting a topic on the brokers;
    /// header `topic`, optional `clusterName`.
    pub const DELETE_TOPIC_IN_NAMESRV: i32 = 216;
    /// QUERY_TOPIC_CONSUME_BY_WHO: the groups that consume a topic.
    pub const QUERY_TOPIC_CONSUME_BY_WHO: i32 = 300;
    /// GET_CONSUMER_RUNNING_INFO: an admin asks a consumer, through the broker, for its state
    /// and thread stack; the broker passes it on to the consumer.
    pub const GET_CONSUMER_RUNNING_INFO: i32 = 307;
    /// CONSUME_MESSAGE_DIRECTLY: an admin has a consumer consume one stored message, through the
    /// broker (body: the stored record, added by the broker).
    pub const CONSUME_MESSAGE_DIRECTLY: i32 = 309;
    pub const SEND_MESSAGE_V2: i32 = 310;
    pub const SEND_BATCH_MESSAGE: i32 = 320;
    /// SEND_REPLY_MESSAGE / _V2: a responder's reply to a request (`producer.request`), to be
    /// pushed to the requesting client.
    pub const SEND_REPLY_MESSAGE: i32 = 324;
    pub const SEND_REPLY_MESSAGE_V2: i32 = 325;
    /// PUSH_REPLY_MESSAGE_TO_CLIENT: the broker hands a reply to the requester's connection.
    pub const PUSH_REPLY_MESSAGE_TO_CLIENT: i32 = 326;
    /// GET_TOPIC_CONFIG (5.x): one topic's config, asked by clients and admin tools.
    pub const GET_TOPIC_CONFIG: i32 = 351;
    /// GET_SUBSCRIPTIONGROUP_CONFIG (5.x): one group's settings; header `group`.
    pub const GET_SUBSCRIPTIONGROUP_CONFIG: i32 = 352;
    pub const LITE_PULL_MESSAGE: i32 = 361;
    /// RECALL_MESSAGE (5.3): cancels a timer message not yet due, named by the recall handle
    /// its send answered with.
    pub const RECALL_MESSAGE: i32 = 370;
    /// SET_MESSAGE_REQUEST_MODE: a group consumes a topic by PULL or POP (body).
    pub const SET_MESSAGE_REQUEST_MODE: i32 = 401;
    /// GET_ALL_MESSAGE_REQUEST_MODE: the `messageRequestMode.json` content.
    pub const GET_ALL_MESSAGE_REQUEST_MODE: i32 = 402;
    /// QUERY_ASSIGNMENT: which queues a client of a group consumes, decided by the broker.
    pub const QUERY_ASSIGNMENT: i32 = 400;
    /// GET_BROKER_HA_STATUS: the replication links of a broker (`mqadmin haStatus`).
    pub const GET_BROKER_HA_STATUS: i32 = 907;
    /// Users and ACLs (RocketMQ 5.3's access control), as `mqadmin createUser` ... `listAcl` send.
    pub const AUTH_CREATE_USER: i32 = 3001;
    pub const AUTH_UPDATE_USER: i32 = 3002;
    pub const AUTH_DELETE_USER: i32 = 3003;
    pub const AUTH_GET_USER: i32 = 3004;
    pub const AUTH_LIST_USER: i32 = 3005;
    pub const AUTH_CREATE_ACL: i32 = 3006;
    pub const AUTH_UPDATE_ACL: i32 = 3007;
    pub const AUTH_DELETE_ACL: i32 = 3008;
    pub const AUTH_GET_ACL: i32 = 3009;
    pub const AUTH_LIST_ACL: i32 = 3010;
    /// POP_MESSAGE: take messages for a while (they come back unless acknowledged).
    pub const POP_MESSAGE: i32 = 200_050;
    pub const ACK_MESSAGE: i32 = 200_051;
    /// PEEK_MESSAGE: read what a pop would return, without taking it.
    pub const PEEK_MESSAGE: i32 = 200_052;
    pub const CHANGE_MESSAGE_INVISIBLETIME: i32 = 200_053;
    /// NOTIFICATION: wait until a pop would find something, without taking it.
    pub const NOTIFICATION: i32 = 200_054;
    /// POLLING_INFO: how many pops are parked on a queue.
    pub const POLLING_INFO: i32 = 200_055;
    pub const BATCH_ACK_MESSAGE: i32 = 200_151;
}

/// Response codes.
pub mod response {
    pub const SUCCESS: i32 = 0;
    pub const SYSTEM_ERROR: i32 = 1;
    pub const SYSTEM_BUSY: i32 = 2;
    pub const REQUEST_CODE_NOT_SUPPORTED: i32 = 3;
    pub const FLUSH_DISK_TIMEOUT: i32 = 10;
    pub const SLAVE_NOT_AVAILABLE: i32 = 11;
    pub const FLUSH_SLAVE_TIMEOUT: i32 = 12;
    pub const MESSAGE_ILLEGAL: i32 = 13;
    pub const SERVICE_NOT_AVAILABLE: i32 = 14;
    pub const NO_PERMISSION: i32 = 16;
    pub const TOPIC_NOT_EXIST: i32 = 17;
    pub const PULL_NOT_FOUND: i32 = 19;
    pub const PULL_RETRY_IMMEDIATELY: i32 = 20;
    pub const PULL_OFFSET_MOVED: i32 = 21;
    pub const QUERY_NOT_FOUND: i32 = 22;
    pub const SUBSCRIPTION_PARSE_FAILED: i32 = 23;
    pub const SUBSCRIPTION_NOT_EXIST: i32 = 24;
    pub const SUBSCRIPTION_NOT_LATEST: i32 = 25;
    pub const SUBSCRIPTION_GROUP_NOT_EXIST: i32 = 26;
    pub const CONSUMER_NOT_ONLINE: i32 = 206;
    /// A consumer did not answer a call the broker passed on to it in time.
    pub const CONSUME_MSG_TIMEOUT: i32 = 207;
    /// A pop found nothing and the broker holds too many parked pops to park this one.
    pub const POLLING_FULL: i32 = 209;
    /// A parked pop found nothing before its poll time ran out.
    pub const POLLING_TIMEOUT: i32 = 210;
    /// NO_MESSAGE: the handle names no message the broker still holds for it.
    pub const NO_MESSAGE: i32 = 208;
    pub const INVALID_PARAMETER: i32 = 29;
    /// A request the broker understands and refuses as it stands (a recall with a bad handle).
    pub const ILLEGAL_OPERATION: i32 = 604;
}

/// Topic permission bits (`perm` in topic configs and routes).
pub mod perm {
    pub const INHERIT: i32 = 0x1;
    pub const WRITE: i32 = 0x2;
    pub const READ: i32 = 0x4;
}
