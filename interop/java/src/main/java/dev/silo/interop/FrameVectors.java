package dev.silo.interop;

import static dev.silo.interop.VectorFile.requireState;

import com.alibaba.fastjson.serializer.SerializerFeature;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.rocketmq.common.BoundaryType;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageBatch;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.sysflag.PullSysFlag;
import org.apache.rocketmq.remoting.netty.NettyEncoder;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RemotingSysResponseCode;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.SerializeType;
import org.apache.rocketmq.remoting.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigAndMappingSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.filter.FilterAPI;
import org.apache.rocketmq.remoting.protocol.header.GetMaxOffsetRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.HeartbeatRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PullMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.PullMessageResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.QueryConsumerOffsetRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.SearchOffsetRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.SendMessageRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.SendMessageRequestHeaderV2;
import org.apache.rocketmq.remoting.protocol.header.SendMessageResponseHeader;
import org.apache.rocketmq.remoting.protocol.header.UpdateConsumerOffsetRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.namesrv.GetRouteInfoRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.namesrv.RegisterBrokerRequestHeader;
import org.apache.rocketmq.remoting.protocol.heartbeat.ConsumeType;
import org.apache.rocketmq.remoting.protocol.heartbeat.ConsumerData;
import org.apache.rocketmq.remoting.protocol.heartbeat.HeartbeatData;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.remoting.protocol.heartbeat.ProducerData;
import org.apache.rocketmq.remoting.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.QueueData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;

/**
 * kind {@code frame}: whole remoting frames as {@code RemotingCommand.encode()} returns them.
 *
 * <p>Every case is built twice (a builder per case) because encoding mutates the command
 * (makeCustomHeaderToNet fills extFields). The second build goes through {@code NettyEncoder},
 * which is what actually reaches the socket; where that differs from {@code encode()} (binary
 * headers that implement FastCodesHeader) an extra {@code *_wire} vector records it.
 */
final class FrameVectors {
    private static final String PRODUCER_GROUP = "ProducerGroupA";
    private static final String CONSUMER_GROUP = "ConsumerGroupA";
    private static final String TOPIC = "TopicTest";
    private static final String BROKER_NAME = "broker-a";
    private static final String BROKER_ADDR = "10.0.0.7:10911";

    private record Case(String name, Supplier<RemotingCommand> build) {
    }

    private FrameVectors() {
    }

    static void write(VectorFile f) throws Exception {
        f.comment("kind frame: out = RemotingCommand.encode() (length prefix + header word + header + body) after");
        f.comment("setSerializeTypeCurrentRPC; ext = cmd.getExtFields() after encode, in the map's iteration order (which");
        f.comment("is also the on-wire order of the ROCKETMQ header map); version = what RemotingCommand put there.");
        f.comment("*_wire vectors: bytes from NettyEncoder (RemotingCommand.fastEncodeHeader, what goes on the socket), emitted");
        f.comment("only where they differ from encode(); there ext lists the header map entries in on-wire order.");

        List<Case> cases = List.of(
            new Case("send_v2", () -> sendV2(false)),
            new Case("send_v1", FrameVectors::sendV1),
            new Case("send_batch", () -> sendV2(true)),
            new Case("pull", FrameVectors::pull),
            new Case("query_offset", FrameVectors::queryOffset),
            new Case("update_offset", () -> updateOffset(false)),
            new Case("get_max_offset", FrameVectors::getMaxOffset),
            new Case("search_offset", FrameVectors::searchOffset),
            new Case("heartbeat", FrameVectors::heartbeat),
            new Case("get_route", FrameVectors::getRoute),
            new Case("register_broker", FrameVectors::registerBroker),
            new Case("send_response", FrameVectors::sendResponse),
            new Case("pull_response", FrameVectors::pullResponse),
            new Case("route_response", () -> routeResponse(false)),
            new Case("route_response_std", () -> routeResponse(true)),
            new Case("error_response", FrameVectors::errorResponse),
            new Case("oneway", () -> updateOffset(true)),
            new Case("unicode_remark", FrameVectors::unicodeRemark));

        for (Case c : cases) {
            for (SerializeType type : new SerializeType[] {SerializeType.JSON, SerializeType.ROCKETMQ}) {
                emit(f, c, type);
            }
        }
        f.blank();
    }

    private static void emit(VectorFile f, Case c, SerializeType type) throws Exception {
        String name = c.name() + "_" + type.name().toLowerCase(Locale.ROOT);

        RemotingCommand cmd = c.build().get();
        cmd.setSerializeTypeCurrentRPC(type);
        ByteBuffer encoded = cmd.encode();
        byte[] out = new byte[encoded.remaining()];
        encoded.get(out);
        List<Map.Entry<String, String>> ext = cmd.getExtFields() == null ? List.of() : new ArrayList<>(cmd.getExtFields().entrySet());
        if (type == SerializeType.ROCKETMQ) {
            requireState(wireEntries(out).equals(ext), name + ": binary map order differs from extFields iteration order " + wireEntries(out) + " vs " + ext);
        }
        checkDecodes(name, out, cmd);
        if (type == SerializeType.JSON && cmd.getExtFields() != null && cmd.getExtFields().isEmpty()) {
            // ext= cannot tell an empty map from a null one, but the JSON text can.
            f.comment(name + ": extFields is an empty map, not null, so the JSON header has \"extFields\":{}");
        }
        line(f, name, cmd, ext, out);

        RemotingCommand twin = c.build().get();
        twin.setSerializeTypeCurrentRPC(type);
        byte[] wire = nettyEncode(twin);
        if (!Arrays.equals(wire, out)) {
            // Only the binary FastCodesHeader path is expected to differ (field order, not content).
            requireState(type == SerializeType.ROCKETMQ, name + ": NettyEncoder differs from encode() for JSON");
            checkDecodes(name + "_wire", wire, cmd);
            line(f, name + "_wire", twin, wireEntries(wire), wire);
        }
    }

    private static void line(VectorFile f, String name, RemotingCommand cmd, List<Map.Entry<String, String>> ext, byte[] out) {
        f.vector("frame", name)
            .str("serialize", cmd.getSerializeTypeCurrentRPC().name())
            .num("code", cmd.getCode())
            .str("language", cmd.getLanguage().name())
            .num("version", cmd.getVersion())
            .num("opaque", cmd.getOpaque())
            .num("flag", cmd.getFlag())
            .str("remark", cmd.getRemark())
            .bytes("ext", ScalarVectors.propertiesBytes(ext))
            .bytes("body", cmd.getBody() == null ? new byte[0] : cmd.getBody())
            .bytes("out", out)
            .end();
    }

    /** Feeds the frame back through Java's decoder (which, like NettyDecoder, expects the length prefix stripped). */
    private static void checkDecodes(String name, byte[] out, RemotingCommand sent) throws Exception {
        requireState(ByteBuffer.wrap(out).getInt() == out.length - 4, name + ": frame length prefix");
        RemotingCommand back = RemotingCommand.decode(Arrays.copyOfRange(out, 4, out.length));
        requireState(back.getCode() == sent.getCode() && back.getFlag() == sent.getFlag()
            && back.getOpaque() == sent.getOpaque() && back.getVersion() == sent.getVersion()
            && back.getLanguage() == sent.getLanguage(), name + ": fixed header fields round trip");
        requireState(Objects.equals(emptyToNull(back.getRemark()), emptyToNull(sent.getRemark())), name + ": remark round trip");
        requireState(orEmpty(back.getExtFields()).equals(orEmpty(sent.getExtFields())), name + ": extFields round trip");
        requireState(Arrays.equals(orEmpty(back.getBody()), orEmpty(sent.getBody())), name + ": body round trip");
    }

    private static byte[] nettyEncode(RemotingCommand cmd) throws Exception {
        ByteBuf buf = Unpooled.buffer();
        try {
            // The handler context is only used on its error path.
            new NettyEncoder().encode(null, cmd, buf);
            byte[] out = new byte[buf.readableBytes()];
            buf.readBytes(out);
            return out;
        } finally {
            buf.release();
        }
    }

    /** The key/value entries of a ROCKETMQ binary header, in the order they appear in the frame. */
    static List<Map.Entry<String, String>> wireEntries(byte[] frame) {
        ByteBuffer b = ByteBuffer.wrap(frame);
        b.position(4 + 4 + 2 + 1 + 2 + 4 + 4);
        int remarkLength = b.getInt();
        b.position(b.position() + remarkLength);
        int mapLength = b.getInt();
        int end = b.position() + mapLength;
        List<Map.Entry<String, String>> entries = new ArrayList<>();
        while (b.position() < end) {
            byte[] k = new byte[b.getShort()];
            b.get(k);
            byte[] v = new byte[b.getInt()];
            b.get(v);
            entries.add(Map.entry(new String(k, StandardCharsets.UTF_8), new String(v, StandardCharsets.UTF_8)));
        }
        return entries;
    }

    // ---- requests ---------------------------------------------------------------------------

    private static Message sampleMessage(String body, int uniq) {
        Message m = new Message(TOPIC, "TagA", "order-" + uniq, body.getBytes(StandardCharsets.UTF_8));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, Fixtures.uniqKey(uniq));
        return m;
    }

    /** What DefaultMQProducerImpl.sendKernelImpl fills in, with fixed values. */
    private static SendMessageRequestHeader sendHeader(Message msg, boolean batch) {
        SendMessageRequestHeader h = new SendMessageRequestHeader();
        h.setProducerGroup(PRODUCER_GROUP);
        h.setTopic(TOPIC);
        h.setDefaultTopic("TBW102");
        h.setDefaultTopicQueueNums(4);
        h.setQueueId(1);
        h.setSysFlag(0);
        h.setBornTimestamp(Fixtures.T0);
        h.setFlag(msg.getFlag());
        h.setProperties(MessageDecoder.messageProperties2String(msg.getProperties()));
        h.setReconsumeTimes(0);
        h.setUnitMode(false);
        h.setMaxReconsumeTimes(16);
        h.setBatch(batch);
        h.setBrokerName(BROKER_NAME);
        return h;
    }

    private static RemotingCommand sendV2(boolean batch) {
        Message msg;
        if (batch) {
            MessageBatch mb = MessageBatch.generateFromList(List.of(
                sampleMessage("batch body 0", 20), sampleMessage("batch body 1", 21), sampleMessage("batch body 2", 22)));
            // The producer gives the batch object its own id, sent in header i.
            MessageAccessor.putProperty(mb, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, Fixtures.uniqKey(23));
            mb.setBody(mb.encode());
            msg = mb;
        } else {
            msg = sampleMessage("Hello RocketMQ", 10);
        }
        SendMessageRequestHeaderV2 v2 = SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(sendHeader(msg, batch));
        RemotingCommand cmd = RemotingCommand.createRequestCommand(
            batch ? RequestCode.SEND_BATCH_MESSAGE : RequestCode.SEND_MESSAGE_V2, v2);
        cmd.setOpaque(batch ? 102 : 101);
        cmd.setBody(msg.getBody());
        return cmd;
    }

    private static RemotingCommand sendV1() {
        Message msg = sampleMessage("Hello RocketMQ", 11);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.SEND_MESSAGE, sendHeader(msg, false));
        cmd.setOpaque(103);
        cmd.setBody(msg.getBody());
        return cmd;
    }

    private static RemotingCommand pull() {
        PullMessageRequestHeader h = new PullMessageRequestHeader();
        h.setConsumerGroup(CONSUMER_GROUP);
        h.setTopic(TOPIC);
        h.setQueueId(0);
        h.setQueueOffset(42L);
        h.setMaxMsgNums(32);
        h.setSysFlag(PullSysFlag.buildSysFlag(true, true, true, false));
        h.setCommitOffset(40L);
        h.setSuspendTimeoutMillis(15_000L);
        h.setSubscription("TagA || TagB");
        h.setSubVersion(Fixtures.T0);
        h.setExpressionType("TAG");
        h.setMaxMsgBytes(262_144);
        h.setBrokerName(BROKER_NAME);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.PULL_MESSAGE, h);
        cmd.setOpaque(104);
        return cmd;
    }

    private static RemotingCommand queryOffset() {
        QueryConsumerOffsetRequestHeader h = new QueryConsumerOffsetRequestHeader();
        h.setConsumerGroup(CONSUMER_GROUP);
        h.setTopic(TOPIC);
        h.setQueueId(1);
        h.setSetZeroIfNotFound(true);
        h.setBrokerName(BROKER_NAME);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.QUERY_CONSUMER_OFFSET, h);
        cmd.setOpaque(105);
        return cmd;
    }

    private static RemotingCommand updateOffset(boolean oneway) {
        UpdateConsumerOffsetRequestHeader h = new UpdateConsumerOffsetRequestHeader();
        h.setConsumerGroup(CONSUMER_GROUP);
        h.setTopic(TOPIC);
        h.setQueueId(1);
        h.setCommitOffset(1024L);
        h.setBrokerName(BROKER_NAME);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.UPDATE_CONSUMER_OFFSET, h);
        cmd.setOpaque(oneway ? 117 : 106);
        if (oneway) {
            cmd.markOnewayRPC();
        }
        return cmd;
    }

    private static RemotingCommand getMaxOffset() {
        GetMaxOffsetRequestHeader h = new GetMaxOffsetRequestHeader();
        h.setTopic(TOPIC);
        h.setQueueId(2);
        h.setBrokerName(BROKER_NAME);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.GET_MAX_OFFSET, h);
        cmd.setOpaque(107);
        return cmd;
    }

    private static RemotingCommand searchOffset() {
        SearchOffsetRequestHeader h = new SearchOffsetRequestHeader();
        h.setTopic(TOPIC);
        h.setQueueId(2);
        h.setTimestamp(Fixtures.T0);
        h.setBoundaryType(BoundaryType.LOWER);
        h.setBrokerName(BROKER_NAME);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, h);
        cmd.setOpaque(108);
        return cmd;
    }

    private static RemotingCommand heartbeat() {
        try {
            SubscriptionData tag = FilterAPI.buildSubscriptionData(TOPIC, "TagA");
            tag.setSubVersion(Fixtures.T0);
            SubscriptionData retry = FilterAPI.buildSubscriptionData("%RETRY%" + CONSUMER_GROUP, "*");
            retry.setSubVersion(Fixtures.T0);

            ConsumerData consumer = new ConsumerData();
            consumer.setGroupName(CONSUMER_GROUP);
            consumer.setConsumeType(ConsumeType.CONSUME_PASSIVELY);
            consumer.setMessageModel(MessageModel.CLUSTERING);
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
            consumer.setUnitMode(false);
            // SubscriptionData hashes by content, so the default HashSet order is stable.
            consumer.getSubscriptionDataSet().add(tag);
            consumer.getSubscriptionDataSet().add(retry);

            ProducerData producer = new ProducerData();
            producer.setGroupName(PRODUCER_GROUP);
            ProducerData inner = new ProducerData();
            inner.setGroupName("CLIENT_INNER_PRODUCER");

            HeartbeatData hb = new HeartbeatData();
            hb.setClientID("10.0.0.5@12345#8123456789012");
            // ProducerData/ConsumerData hash by identity; insertion-ordered sets keep the JSON stable.
            hb.setConsumerDataSet(new LinkedHashSet<>(List.of(consumer)));
            hb.setProducerDataSet(new LinkedHashSet<>(List.of(producer, inner)));

            RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.HEART_BEAT, new HeartbeatRequestHeader());
            cmd.setOpaque(109);
            cmd.setBody(hb.encode());
            return cmd;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static RemotingCommand getRoute() {
        GetRouteInfoRequestHeader h = new GetRouteInfoRequestHeader();
        h.setTopic(TOPIC);
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, h);
        cmd.setOpaque(110);
        return cmd;
    }

    private static RemotingCommand registerBroker() {
        DataVersion dataVersion = new DataVersion();
        dataVersion.setTimestamp(Fixtures.T0);
        dataVersion.setCounter(new AtomicLong(3));
        DataVersion mappingVersion = new DataVersion();
        mappingVersion.setTimestamp(Fixtures.T0);

        ConcurrentHashMap<String, TopicConfig> topics = new ConcurrentHashMap<>();
        topics.put(TOPIC, new TopicConfig(TOPIC, 4, 4, 6));
        TopicConfigAndMappingSerializeWrapper wrapper = new TopicConfigAndMappingSerializeWrapper();
        wrapper.setDataVersion(dataVersion);
        wrapper.setMappingDataVersion(mappingVersion);
        wrapper.setTopicConfigTable(topics);

        RegisterBrokerBody body = new RegisterBrokerBody();
        body.setTopicConfigSerializeWrapper(wrapper);
        byte[] bytes = body.encode(false);

        RegisterBrokerRequestHeader h = new RegisterBrokerRequestHeader();
        h.setBrokerName(BROKER_NAME);
        h.setBrokerAddr(BROKER_ADDR);
        h.setClusterName("DefaultCluster");
        h.setHaServerAddr("10.0.0.7:10912");
        h.setBrokerId(0L);
        h.setHeartbeatTimeoutMillis(120_000L);
        h.setEnableActingMaster(false);
        h.setCompressed(false);
        h.setBodyCrc32(UtilAll.crc32(bytes));
        RemotingCommand cmd = RemotingCommand.createRequestCommand(RequestCode.REGISTER_BROKER, h);
        cmd.setOpaque(111);
        cmd.setBody(bytes);
        return cmd;
    }

    // ---- responses --------------------------------------------------------------------------

    /** Shaped like SendMessageProcessor's success answer. */
    private static RemotingCommand sendResponse() {
        RemotingCommand cmd = RemotingCommand.createResponseCommand(SendMessageResponseHeader.class);
        cmd.setOpaque(101);
        cmd.setCode(ResponseCode.SUCCESS);
        cmd.setRemark(null);
        SendMessageResponseHeader h = (SendMessageResponseHeader) cmd.readCustomHeader();
        h.setMsgId(MessageDecoder.createMessageId(Fixtures.socket(Fixtures.IPV4_STORE, Fixtures.BROKER_PORT), 123_456));
        h.setQueueId(1);
        h.setQueueOffset(42L);
        h.setTransactionId(Fixtures.uniqKey(10));
        cmd.addExtField(MessageConst.PROPERTY_MSG_REGION, "DefaultRegion");
        cmd.addExtField(MessageConst.PROPERTY_TRACE_SWITCH, "true");
        cmd.markResponseType();
        return cmd;
    }

    /** A FOUND pull answer: the broker's remark is the store status name; body = stored records. */
    private static RemotingCommand pullResponse() {
        try {
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            for (int i = 0; i < 2; i++) {
                var rec = RecordVectors.base(TOPIC, ("pulled " + i).getBytes(StandardCharsets.UTF_8));
                rec.setQueueId(0);
                rec.setQueueOffset(42 + i);
                rec.setCommitLogOffset(123_456 + 200L * i);
                MessageAccessor.putProperty(rec, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, Fixtures.uniqKey(30 + i));
                body.write(RecordVectors.encode(rec));
            }
            RemotingCommand cmd = RemotingCommand.createResponseCommand(PullMessageResponseHeader.class);
            cmd.setOpaque(104);
            cmd.setCode(ResponseCode.SUCCESS);
            cmd.setRemark("FOUND");
            PullMessageResponseHeader h = (PullMessageResponseHeader) cmd.readCustomHeader();
            h.setSuggestWhichBrokerId(0L);
            h.setNextBeginOffset(44L);
            h.setMinOffset(0L);
            h.setMaxOffset(44L);
            cmd.setBody(body.toByteArray());
            return cmd;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * ClientRequestProcessor.getRouteInfoByTopic: plain {@code encode()} (bare numeric map keys) for
     * requesters older than V4_9_4, the four-feature standard JSON otherwise ({@code _std}).
     */
    private static RemotingCommand routeResponse(boolean standardJson) {
        HashMap<Long, String> addrs = new HashMap<>();
        addrs.put(0L, BROKER_ADDR);
        addrs.put(1L, "10.0.0.8:10911");
        BrokerData broker = new BrokerData("DefaultCluster", BROKER_NAME, addrs);
        QueueData queue = new QueueData();
        queue.setBrokerName(BROKER_NAME);
        queue.setReadQueueNums(4);
        queue.setWriteQueueNums(4);
        queue.setPerm(6);
        queue.setTopicSysFlag(0);
        TopicRouteData route = new TopicRouteData();
        route.getBrokerDatas().add(broker);
        route.getQueueDatas().add(queue);

        RemotingCommand cmd = RemotingCommand.createResponseCommand(null);
        cmd.setOpaque(110);
        cmd.setBody(standardJson
            ? route.encode(SerializerFeature.BrowserCompatible, SerializerFeature.QuoteFieldNames,
                SerializerFeature.SkipTransientField, SerializerFeature.MapSortField)
            : route.encode());
        cmd.setCode(ResponseCode.SUCCESS);
        cmd.setRemark(null);
        return cmd;
    }

    private static RemotingCommand errorResponse() {
        RemotingCommand cmd = RemotingCommand.createResponseCommand(
            RemotingSysResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 999 not supported");
        cmd.setOpaque(112);
        return cmd;
    }

    /** Pins down the JSON escaping of non-ASCII, quote, backslash and control characters. */
    private static RemotingCommand unicodeRemark() {
        RemotingCommand cmd = RemotingCommand.createResponseCommand(ResponseCode.SYSTEM_ERROR,
            "错误 ошибка 🚀 \"quoted\" back\\slash /slash <tag> tab\t nl\n cr\r bs\b ff\f nul\u0000 ctl\u0001"
                + " us\u001f del\u007f ls\u2028 é");
        cmd.setOpaque(113);
        return cmd;
    }

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }

    private static Map<String, String> orEmpty(Map<String, String> m) {
        return m == null ? Map.of() : m;
    }

    private static byte[] orEmpty(byte[] b) {
        return b == null ? new byte[0] : b;
    }
}
