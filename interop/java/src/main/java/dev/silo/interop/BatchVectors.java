package dev.silo.interop;

import static dev.silo.interop.VectorFile.requireState;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageDecoder;

/** kind {@code batch}: the SEND_BATCH_MESSAGE body a client builds (MessageDecoder.encodeMessages). */
final class BatchVectors {
    private static final String TOPIC = "TopicTest";

    private BatchVectors() {
    }

    static void write(VectorFile f) throws Exception {
        f.comment("kind batch: MessageDecoder.encodeMessage(msg) per message (m<i>.single), "
            + "MessageDecoder.encodeMessages(list) (out); m<i>.props = messageProperties2String(msg.getProperties()).");

        emit(f, "empty_body", List.of(message(new byte[0], "TagA", "k1", 1)));

        Message unicode = message("тело 🚀 本体".getBytes(StandardCharsets.UTF_8), "标签", "ключ 鍵", 2);
        unicode.putUserProperty("emoji", "🚀");
        unicode.putUserProperty("ключ", "значение");
        unicode.putUserProperty("标签", "值");
        emit(f, "unicode_props", List.of(unicode));

        emit(f, "body_4k", List.of(message(Fixtures.pattern(4096, 4), "TagA", "order-4096", 3)));

        emit(f, "flag_min", List.of(flagged(Integer.MIN_VALUE, 4)));
        emit(f, "flag_max", List.of(flagged(Integer.MAX_VALUE, 5)));
        emit(f, "flag_zero", List.of(flagged(0, 6)));
        emit(f, "flag_minus_one", List.of(flagged(-1, 7)));

        emit(f, "empty_list", List.of());

        List<Message> hundred = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            // Sizes sweep 0..300 (both ends included) in a scrambled order; tags/keys on some only.
            int size = i == 99 ? 300 : (i * 37) % 301;
            String tags = i % 3 == 0 ? "Tag" + (i % 7) : null;
            String keys = i % 4 == 0 ? "key-" + i + " order-" + (i / 10) : null;
            Message m = new Message(TOPIC, tags, keys, Fixtures.pattern(size, i));
            m.setFlag(i % 5 == 0 ? i : 0);
            MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, Fixtures.uniqKey(100 + i));
            hundred.add(m);
        }
        emit(f, "hundred", hundred);

        // A message whose properties map was never created: Java writes a 0 property length.
        Message bare = new Message();
        bare.setTopic(TOPIC);
        bare.setBody("no properties".getBytes(StandardCharsets.UTF_8));
        requireState(bare.getProperties() == null, "expected a null properties map");
        Message empty = new Message();
        empty.setTopic(TOPIC);
        empty.setBody(new byte[] {1, 2, 3});
        MessageAccessor.setProperties(empty, new HashMap<>());
        emit(f, "no_props", List.of(bare, empty));
        f.blank();
    }

    private static Message message(byte[] body, String tags, String keys, int uniq) {
        Message m = new Message(TOPIC, tags, keys, body);
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, Fixtures.uniqKey(uniq));
        return m;
    }

    private static Message flagged(int flag, int uniq) {
        Message m = message(("flag " + flag).getBytes(StandardCharsets.UTF_8), "TagA", null, uniq);
        m.setFlag(flag);
        return m;
    }

    private static void emit(VectorFile f, String name, List<Message> messages) throws Exception {
        byte[] out = MessageDecoder.encodeMessages(messages);
        VectorFile.Line line = f.vector("batch", name).num("count", messages.size());
        int pos = 0;
        for (int i = 0; i < messages.size(); i++) {
            Message m = messages.get(i);
            byte[] single = MessageDecoder.encodeMessage(m);
            String props = MessageDecoder.messageProperties2String(m.getProperties());
            // The batch is documented as the plain concatenation of the single encodings.
            requireState(Arrays.equals(single, Arrays.copyOfRange(out, pos, pos + single.length)),
                name + ": batch is not the concatenation of single encodings");
            pos += single.length;
            line.num("m" + i + ".flag", m.getFlag())
                .bytes("m" + i + ".body", m.getBody())
                .str("m" + i + ".props", props)
                .bytes("m" + i + ".single", single);
        }
        requireState(pos == out.length, name + ": trailing bytes in batch");
        line.bytes("out", out).end();

        // Java's own reader must give back what went in.
        List<Message> decoded = MessageDecoder.decodeMessages(ByteBuffer.wrap(out));
        requireState(decoded.size() == messages.size(), name + ": decoded count");
        for (int i = 0; i < messages.size(); i++) {
            Message in = messages.get(i);
            Message back = decoded.get(i);
            requireState(back.getFlag() == in.getFlag(), name + ": flag round trip");
            requireState(Arrays.equals(back.getBody(), in.getBody()), name + ": body round trip");
            Map<String, String> expect = in.getProperties() == null ? Map.of() : in.getProperties();
            requireState(back.getProperties().equals(expect), name + ": properties round trip");
        }
    }
}
