package dev.silo.interop;

import static dev.silo.interop.VectorFile.requireState;

import java.io.ByteArrayOutputStream;
import java.net.Inet6Address;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.zip.Deflater;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.message.MessageVersion;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;
import org.apache.rocketmq.store.MessageExtEncoder;
import org.apache.rocketmq.store.config.MessageStoreConfig;

/**
 * kind {@code record}: the stored message record (commit log, pull and view bodies).
 *
 * <p>Two 5.3.3 writers exist. {@code MessageDecoder.encode} is the general-purpose one in
 * rocketmq-common; it only knows the v1 layout. The broker's commit log writes through the
 * store's {@code MessageExtEncoder}, which also writes v2 (2-byte topic length). For every v1 case
 * we produce both and insist they agree, so each vector pins down the broker's bytes either way.
 */
final class RecordVectors {
    /** The encoder keeps a reusable direct buffer; one instance is enough for the whole run. */
    private static final MessageExtEncoder STORE_ENCODER = new MessageExtEncoder(new MessageStoreConfig());

    private RecordVectors() {
    }

    static void write(VectorFile f) throws Exception {
        f.comment("kind record: out = MessageDecoder.encode(msgExt, false) unless a comment says otherwise; for v1");
        f.comment("records the store's MessageExtEncoder.encode(msgInner) (+ the physical offset CommitLog.doAppend");
        f.comment("fills in) was checked to give identical bytes. msg_id = MessageDecoder.decode(out, true, false).getMsgId().");

        MessageExtBrokerInner v1 = base("TopicTest", "Hello RocketMQ 0".getBytes(StandardCharsets.UTF_8));
        emit(f, "v1_ipv4", v1);

        MessageExtBrokerInner bornV6 = base("TopicTest", "born on IPv6".getBytes(StandardCharsets.UTF_8));
        bornV6.setBornHost(Fixtures.socket(Fixtures.IPV6_CLIENT, Fixtures.CLIENT_PORT));
        explainMissingV6Flag(f, bornV6);
        emit(f, "v1_ipv6_born", bornV6);

        MessageExtBrokerInner bothV6 = base("TopicTest", "IPv6 both ways".getBytes(StandardCharsets.UTF_8));
        bothV6.setBornHost(Fixtures.socket(Fixtures.IPV6_CLIENT, Fixtures.CLIENT_PORT));
        bothV6.setStoreHost(Fixtures.socket(Fixtures.IPV6_STORE, Fixtures.BROKER_PORT));
        emit(f, "v1_ipv6_both", bothV6);

        // Topics longer than 127 are only legal for %RETRY%/%DLQ% topics (up to 255).
        StringBuilder longTopic = new StringBuilder("%RETRY%");
        for (int i = 0; longTopic.length() < 200; i++) {
            longTopic.append((char) ('a' + i % 26));
        }
        MessageExtBrokerInner v2 = base(longTopic.toString(), "long topic".getBytes(StandardCharsets.UTF_8));
        v2.setReconsumeTimes(1);
        explainV1WriterOnLongTopic(f, v2);
        emit(f, "v2_long_topic", v2);

        byte[] plain = new byte[8192];
        for (int i = 0; i < plain.length; i++) {
            plain[i] = (byte) "compressible text, ".charAt(i % 19);
        }
        MessageExtBrokerInner compressed = base("TopicTest", zlib(plain));
        compressed.setSysFlag(MessageSysFlag.COMPRESSED_FLAG | MessageSysFlag.COMPRESSION_ZLIB_TYPE);
        f.comment("compressed: body is the zlib stream (java.util.zip.Deflater level 5, the client default) of 8192 bytes");
        f.comment("of \"compressible text, \" repeated; it is stored as-is, body_crc covers the compressed bytes.");
        emit(f, "compressed", compressed);
        // The consumer-side path must inflate it back to the original.
        MessageExt inflated = MessageDecoder.decode(ByteBuffer.wrap(MessageDecoder.encode(compressed, false)), true, true);
        requireState(Arrays.equals(inflated.getBody(), plain), "compressed: inflate round trip");
        requireState((inflated.getSysFlag() & MessageSysFlag.COMPRESSED_FLAG) == 0, "compressed: flag cleared on inflate");

        emit(f, "empty_body", base("TopicTest", new byte[0]));

        MessageExtBrokerInner noProps = base("TopicTest", "no properties".getBytes(StandardCharsets.UTF_8));
        MessageAccessor.setProperties(noProps, null);
        emit(f, "empty_props", noProps);

        // Topic names are ASCII-only in RocketMQ; non-ASCII goes in properties and the body.
        MessageExtBrokerInner unicode = base("TopicTest", "消息体 — сообщение 🚀".getBytes(StandardCharsets.UTF_8));
        unicode.setTags("标签");
        unicode.setKeys("ключ 鍵");
        unicode.putUserProperty("emoji", "🚀🎉");
        emit(f, "unicode", unicode);

        MessageExtBrokerInner max = base("TopicTest", "max".getBytes(StandardCharsets.UTF_8));
        max.setQueueId(Integer.MAX_VALUE);
        max.setFlag(Integer.MIN_VALUE);
        max.setQueueOffset(Long.MAX_VALUE);
        max.setCommitLogOffset(Long.MAX_VALUE - 1);
        max.setBornTimestamp(Long.MAX_VALUE - 2);
        max.setStoreTimestamp(Long.MAX_VALUE - 3);
        max.setReconsumeTimes(Integer.MAX_VALUE);
        max.setPreparedTransactionOffset(Long.MAX_VALUE);
        max.setBornHost(Fixtures.socket(new byte[] {(byte) 255, (byte) 255, (byte) 255, (byte) 254}, 65535));
        max.setStoreHost(Fixtures.socket(new byte[] {(byte) 255, (byte) 255, (byte) 255, (byte) 255}, 65535));
        emit(f, "max_values", max);
        f.blank();
    }

    /** A record with every field set; cases override what they are about. */
    static MessageExtBrokerInner base(String topic, byte[] body) {
        MessageExtBrokerInner m = new MessageExtBrokerInner();
        m.setTopic(topic);
        m.setBody(body);
        m.setQueueId(3);
        m.setFlag(0);
        m.setQueueOffset(42);
        m.setCommitLogOffset(123_456);
        m.setSysFlag(0);
        m.setBornTimestamp(Fixtures.T0);
        m.setBornHost(Fixtures.socket(Fixtures.IPV4_CLIENT, Fixtures.CLIENT_PORT));
        m.setStoreTimestamp(Fixtures.T0 + 3);
        m.setStoreHost(Fixtures.socket(Fixtures.IPV4_STORE, Fixtures.BROKER_PORT));
        m.setReconsumeTimes(0);
        m.setPreparedTransactionOffset(0);
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, Fixtures.uniqKey(1));
        m.setTags("TagA");
        m.setKeys("order-1");
        return m;
    }

    /**
     * What CommitLog.asyncPutMessage does before encoding: neither writer derives the IPv6 flags
     * or the version from the data, the broker sets them from the socket addresses and topic.
     */
    private static void prepareLikeCommitLog(MessageExtBrokerInner m) {
        if (((InetSocketAddress) m.getBornHost()).getAddress() instanceof Inet6Address) {
            m.setBornHostV6Flag();
        }
        if (((InetSocketAddress) m.getStoreHost()).getAddress() instanceof Inet6Address) {
            m.setStoreHostAddressV6Flag();
        }
        m.setVersion(m.getTopic().length() > Byte.MAX_VALUE
            ? MessageVersion.MESSAGE_VERSION_V2 : MessageVersion.MESSAGE_VERSION_V1);
        m.setBodyCRC(UtilAll.crc32(m.getBody()));
        m.setPropertiesString(MessageDecoder.messageProperties2String(m.getProperties()));
    }

    /** The broker's own writer; returns the record as it lands in the commit log. */
    static byte[] storeEncode(MessageExtBrokerInner m) {
        requireState(STORE_ENCODER.encode(m) == null, "MessageExtEncoder rejected " + m.getTopic());
        ByteBuffer buf = STORE_ENCODER.getEncoderBuffer();
        byte[] out = new byte[buf.getInt(0)];
        buf.get(out);
        // CommitLog.doAppend writes the physical offset once it knows the file position.
        ByteBuffer.wrap(out).putLong(MessageDecoder.MESSAGE_PHYSIC_OFFSET_POSITION, m.getCommitLogOffset());
        return out;
    }

    /** Encodes a record the way the vectors define it (see the class comment). */
    static byte[] encode(MessageExtBrokerInner m) throws Exception {
        prepareLikeCommitLog(m);
        byte[] store = storeEncode(m);
        if (m.getVersion() == MessageVersion.MESSAGE_VERSION_V2) {
            return store;
        }
        byte[] common = MessageDecoder.encode(m, false);
        requireState(Arrays.equals(common, store), m.getTopic() + ": MessageDecoder.encode and MessageExtEncoder disagree");
        return common;
    }

    private static void emit(VectorFile f, String name, MessageExtBrokerInner m) throws Exception {
        byte[] out = encode(m);
        if (m.getVersion() == MessageVersion.MESSAGE_VERSION_V2) {
            f.comment(name + ": written by rocketmq-store 5.3.3 MessageExtEncoder.encode(msgInner) with version "
                + "MESSAGE_VERSION_V2 (CommitLog picks it when topic.length() > 127), physical offset filled as CommitLog.doAppend does.");
        }
        InetSocketAddress born = (InetSocketAddress) m.getBornHost();
        InetSocketAddress store = (InetSocketAddress) m.getStoreHost();

        MessageExt back = MessageDecoder.decode(ByteBuffer.wrap(out), true, false);
        requireState(back != null, name + ": Java could not decode its own record");
        requireState(back.getStoreSize() == out.length, name + ": store size");
        requireState(back.getTopic().equals(m.getTopic()), name + ": topic round trip");
        requireState(Arrays.equals(back.getBody() == null ? new byte[0] : back.getBody(), m.getBody()), name + ": body round trip");
        requireState(orEmpty(back.getProperties()).equals(orEmpty(m.getProperties())), name + ": properties round trip");
        requireState(back.getQueueId() == m.getQueueId() && back.getFlag() == m.getFlag()
            && back.getQueueOffset() == m.getQueueOffset() && back.getCommitLogOffset() == m.getCommitLogOffset()
            && back.getSysFlag() == m.getSysFlag() && back.getBornTimestamp() == m.getBornTimestamp()
            && back.getStoreTimestamp() == m.getStoreTimestamp() && back.getReconsumeTimes() == m.getReconsumeTimes()
            && back.getPreparedTransactionOffset() == m.getPreparedTransactionOffset()
            && back.getBodyCRC() == m.getBodyCRC()
            && back.getBornHost().equals(born) && back.getStoreHost().equals(store), name + ": fixed fields round trip");
        requireState(back.getMsgId().equals(MessageDecoder.createMessageId(store, m.getCommitLogOffset())), name + ": msgId");

        f.vector("record", name)
            .str("topic", m.getTopic())
            .bytes("body", m.getBody())
            .str("props", m.getPropertiesString())
            .num("queue_id", m.getQueueId())
            .num("flag", m.getFlag())
            .num("queue_offset", m.getQueueOffset())
            .num("physical_offset", m.getCommitLogOffset())
            .num("sys_flag", m.getSysFlag())
            .num("born_timestamp", m.getBornTimestamp())
            .bytes("born_host", born.getAddress().getAddress())
            .num("born_port", born.getPort())
            .num("store_timestamp", m.getStoreTimestamp())
            .bytes("store_host", store.getAddress().getAddress())
            .num("store_port", store.getPort())
            .num("reconsume_times", m.getReconsumeTimes())
            .num("prepared_tx_offset", m.getPreparedTransactionOffset())
            .num("body_crc", m.getBodyCRC())
            .bytes("out", out)
            .str("msg_id", back.getMsgId())
            .end();
    }

    /** Records, as a comment, what MessageDecoder.encode does with an IPv6 host but no V6 sysFlag bit. */
    private static void explainMissingV6Flag(VectorFile f, MessageExtBrokerInner m) {
        MessageExtBrokerInner copy = base(m.getTopic(), m.getBody());
        copy.setBornHost(m.getBornHost());
        copy.setBodyCRC(UtilAll.crc32(copy.getBody()));
        String outcome;
        try {
            byte[] out = MessageDecoder.encode(copy, false);
            outcome = "writes " + out.length + " bytes";
        } catch (Exception e) {
            outcome = "throws " + e.getClass().getName();
        }
        f.comment("MessageDecoder.encode sizes host fields from sysFlag only: an IPv6 born host without BORNHOST_V6_FLAG "
            + outcome + ". The IPv6 vectors set the flags the way CommitLog.asyncPutMessage does (from the address type).");
    }

    /** Records, as a comment, what the v1-only MessageDecoder.encode makes of a long topic. */
    private static void explainV1WriterOnLongTopic(VectorFile f, MessageExtBrokerInner m) {
        MessageExtBrokerInner copy = base(m.getTopic(), m.getBody());
        copy.setBodyCRC(UtilAll.crc32(copy.getBody()));
        String outcome;
        try {
            byte[] v1 = MessageDecoder.encode(copy, false);
            MessageExt back = MessageDecoder.decode(ByteBuffer.wrap(v1), true, false);
            outcome = "writes " + v1.length + " bytes that decode to " + (back == null ? "null" : back.getTopic().length() + " topic chars");
        } catch (Exception e) {
            // The length byte is (byte) 200 = -56, so the buffer it sizes is too small.
            outcome = "throws " + e.getClass().getName();
        }
        f.comment("MessageDecoder.encode only writes v1 (magic 0xdaa320a7, 1-byte topic length): for this " + m.getTopic().length()
            + "-byte topic it " + outcome + ". MessageDecoder.decode reads both v1 and v2 (MessageVersion chosen by magic).");
    }

    private static Map<String, String> orEmpty(Map<String, String> m) {
        return m == null ? Map.of() : m;
    }

    private static byte[] zlib(byte[] data) {
        Deflater deflater = new Deflater(5);
        try {
            deflater.setInput(data);
            deflater.finish();
            ByteArrayOutputStream bos = new ByteArrayOutputStream();
            byte[] chunk = new byte[4096];
            while (!deflater.finished()) {
                bos.write(chunk, 0, deflater.deflate(chunk));
            }
            return bos.toByteArray();
        } finally {
            deflater.end();
        }
    }
}
