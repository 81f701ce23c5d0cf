package dev.silo.interop;

import static dev.silo.interop.VectorFile.requireState;

import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.common.message.MessageId;

/** kinds {@code msgid}, {@code crc}, {@code tag} and {@code props}: small pure functions. */
final class ScalarVectors {
    private ScalarVectors() {
    }

    static void write(VectorFile f) throws Exception {
        writeMsgIds(f);
        writeCrcs(f);
        writeTags(f);
        writeProps(f);
    }

    private static void writeMsgIds(VectorFile f) throws Exception {
        f.comment("kind msgid: out = MessageDecoder.createMessageId(new InetSocketAddress(host, port), offset)"
            + " (uppercase hex text); decodeMessageId round trip checked in Java.");
        long[] offsets = {0, 1, 123_456_789, Long.MAX_VALUE, -1};
        String[] offsetNames = {"0", "1", "123456789", "max", "minus_one"};
        for (int v6 = 0; v6 < 2; v6++) {
            byte[] host = v6 == 0 ? Fixtures.IPV4_STORE : Fixtures.IPV6_STORE;
            for (int i = 0; i < offsets.length; i++) {
                msgId(f, (v6 == 0 ? "ipv4_" : "ipv6_") + offsetNames[i], host, Fixtures.BROKER_PORT, offsets[i]);
            }
        }
        msgId(f, "ipv4_port_max", new byte[] {(byte) 192, (byte) 168, 1, (byte) 200}, 65535, 4096);
        f.blank();
    }

    private static void msgId(VectorFile f, String name, byte[] host, int port, long offset) throws Exception {
        InetSocketAddress address = Fixtures.socket(host, port);
        String id = MessageDecoder.createMessageId(address, offset);

        // The store/decoder path builds the same id from a pre-serialised host buffer.
        ByteBuffer hostBytes = ByteBuffer.allocate(host.length + 4).put(host).putInt(port);
        hostBytes.flip();
        String viaBuffer = MessageDecoder.createMessageId(ByteBuffer.allocate(host.length + 12), hostBytes, offset);
        requireState(id.equals(viaBuffer), name + ": the two createMessageId overloads disagree");

        MessageId back = MessageDecoder.decodeMessageId(id);
        requireState(back.getAddress().equals(address) && back.getOffset() == offset, name + ": decodeMessageId round trip");

        f.vector("msgid", name).bytes("host", host).num("port", port).num("offset", offset).str("out", id).end();
    }

    private static void writeCrcs(VectorFile f) {
        f.comment("kind crc: out = UtilAll.crc32(data) (CRC-32/IEEE masked with 0x7fffffff).");
        crc(f, "empty", new byte[0]);
        crc(f, "hello", "hello".getBytes(StandardCharsets.UTF_8));
        requireState(UtilAll.crc32("hello".getBytes(StandardCharsets.UTF_8)) == 907060870, "crc32(hello)");
        crc(f, "pattern_4k", Fixtures.pattern(4096, 4));
        byte[] all = new byte[256];
        for (int i = 0; i < all.length; i++) {
            all[i] = (byte) i;
        }
        crc(f, "bytes_00_ff", all);
        // The masking drops the top bit; make sure at least one case has it set before masking.
        crc(f, "ascii_123456789", "123456789".getBytes(StandardCharsets.US_ASCII));
        int[] lengths = {1, 3, 64, 1000, 4097};
        for (int i = 0; i < lengths.length; i++) {
            crc(f, "random_seed" + (42 + i) + "_len" + lengths[i], Fixtures.seededRandom(42 + i, lengths[i]));
        }
        f.blank();
    }

    private static void crc(VectorFile f, String name, byte[] data) {
        f.vector("crc", name).bytes("data", data).num("out", UtilAll.crc32(data)).end();
    }

    private static void writeTags(VectorFile f) {
        f.comment("kind tag: out = MessageExtBrokerInner.tagsString2tagsCode(tags) (Java String.hashCode over UTF-16,"
            + " widened to long; 0 for empty).");
        tag(f, "tag_a", "TagA");
        requireState(MessageExtBrokerInner.tagsString2tagsCode("TagA") == 2598919, "hash(TagA)");
        tag(f, "empty", "");
        tag(f, "star", "*");
        tag(f, "a", "a");
        StringBuilder longTag = new StringBuilder();
        for (int i = 0; longTag.length() < 255; i++) {
            longTag.append("Tag").append(i).append('_');
        }
        tag(f, "long_ascii", longTag.substring(0, 255));
        tag(f, "chinese", "标签");
        tag(f, "cyrillic", "ключ");
        tag(f, "emoji_surrogate_pair", "🚀");
        tag(f, "nul_inside", "Tag\u0000A");
        tag(f, "or_expression", "TagA || TagB");
        tag(f, "negative", "TagNeg");
        requireState(MessageExtBrokerInner.tagsString2tagsCode("TagNeg") < 0, "TagNegative should hash negative");
        // A classic string whose hash is exactly Integer.MIN_VALUE (edge for abs/negation bugs).
        tag(f, "int_min", "polygenelubricants");
        requireState(MessageExtBrokerInner.tagsString2tagsCode("polygenelubricants") == Integer.MIN_VALUE, "int_min hash");
        f.blank();
    }

    private static void tag(VectorFile f, String name, String tags) {
        f.vector("tag", name).str("tag", tags).num("out", MessageExtBrokerInner.tagsString2tagsCode(tags)).end();
    }

    private static void writeProps(VectorFile f) {
        f.comment("kind props: out = MessageDecoder.string2messageProperties(in) re-encoded as key\\u0001value\\u0002 pairs,");
        f.comment("sorted by key in UTF-8 byte order (so the expected bytes do not depend on HashMap order).");
        props(f, "normal_trailing_sep", "UNIQ_KEY\u0001ABC\u0002TAGS\u0001TagA\u0002KEYS\u0001k1 k2\u0002WAIT\u0001true\u0002");
        props(f, "no_trailing_sep", "UNIQ_KEY\u0001ABC\u0002TAGS\u0001TagA\u0002KEYS\u0001k1 k2");
        props(f, "duplicate_keys", "TAGS\u0001first\u0002KEYS\u0001k\u0002TAGS\u0001second\u0002");
        props(f, "empty_value", "A\u0001\u0002B\u0001b\u0002C\u0001");
        props(f, "empty_key", "\u0001orphan\u0002B\u0001b\u0002");
        props(f, "value_with_name_sep", "K\u0001v1\u0001v2\u0002L\u0001\u0001x\u0002");
        props(f, "short_segments", "a\u0002ab\u0002\u0002a\u0001\u0002xy\u0001z\u0002k\u0001v");
        props(f, "no_name_sep", "justtext\u0002K\u0001v\u0002");
        props(f, "empty_string", "");
        props(f, "only_separators", "\u0002\u0002\u0001\u0002");
        props(f, "unicode", "标签\u0001值\u0002ключ\u0001значение\u0002emoji\u0001🚀🎉\u0002é\u0001ü\u0002");
        f.blank();
    }

    private static void props(VectorFile f, String name, String in) {
        Map<String, String> parsed = MessageDecoder.string2messageProperties(in);
        List<Map.Entry<String, String>> sorted = new ArrayList<>(parsed.entrySet());
        sorted.sort((x, y) -> Arrays.compareUnsigned(VectorFile.utf8(x.getKey()), VectorFile.utf8(y.getKey())));
        f.vector("props", name).str("in", in).bytes("out", propertiesBytes(sorted)).end();
    }

    /** key \u0001 value \u0002 ..., UTF-8: the properties-string layout, reused for frame extFields. */
    static byte[] propertiesBytes(Collection<Map.Entry<String, String>> entries) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Map.Entry<String, String> e : entries) {
            out.writeBytes(VectorFile.utf8(e.getKey()));
            out.write(1);
            out.writeBytes(VectorFile.utf8(e.getValue()));
            out.write(2);
        }
        return out.toByteArray();
    }
}
