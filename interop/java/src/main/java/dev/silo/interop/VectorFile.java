package dev.silo.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Accumulates the text vector file.
 *
 * <p>The format is deliberately trivial so the Rust side can parse it without a dependency:
 * one vector per line, {@code <kind> <name> key=value ...}; values are lowercase hex of bytes,
 * except integer fields, which are decimal. Comment lines start with {@code #}.
 */
final class VectorFile {
    private static final Pattern NAME = Pattern.compile("[a-z0-9_]+");
    private static final Pattern KEY = Pattern.compile("[a-z0-9_.]+");
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private final List<String> lines = new ArrayList<>();
    /** kind + name pairs already written; a duplicate would silently shadow a vector in the Rust tests. */
    private final Set<String> seen = new HashSet<>();

    void comment(String text) {
        for (String part : text.split("\n", -1)) {
            requireState(part.chars().noneMatch(c -> c < 0x20 && c != '\t'), "control character in comment: " + part);
            lines.add(part.isEmpty() ? "#" : "# " + part);
        }
    }

    void blank() {
        lines.add("");
    }

    Line vector(String kind, String name) {
        requireState(NAME.matcher(kind).matches(), "bad kind " + kind);
        requireState(NAME.matcher(name).matches(), "bad vector name " + name);
        requireState(seen.add(kind + " " + name), "duplicate vector " + kind + " " + name);
        Line line = new Line(kind, name);
        lines.add(null); // placeholder, filled by Line.end()
        line.slot = lines.size() - 1;
        return line;
    }

    void writeTo(Path out) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            requireState(line != null, "vector on line " + (i + 1) + " was never ended");
            sb.append(line).append('\n');
        }
        Path dir = out.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        // Write beside the target and rename, so an interrupted run never leaves half a file behind.
        Path tmp = dir.resolve("." + out.getFileName() + ".tmp");
        try {
            Files.writeString(tmp, sb, StandardCharsets.UTF_8);
            Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    static String hex(byte[] bytes) {
        char[] chars = new char[bytes.length * 2];
        for (int i = 0; i < bytes.length; i++) {
            chars[2 * i] = HEX[(bytes[i] >> 4) & 0xf];
            chars[2 * i + 1] = HEX[bytes[i] & 0xf];
        }
        return new String(chars);
    }

    static byte[] utf8(String s) {
        return s == null ? new byte[0] : s.getBytes(StandardCharsets.UTF_8);
    }

    /** Our own consistency checks must run even without {@code -ea}, so no {@code assert}. */
    static void requireState(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException(what);
        }
    }

    /** One vector line under construction; keys are appended in the order the format prescribes. */
    final class Line {
        private final StringBuilder sb = new StringBuilder();
        private int slot;

        private Line(String kind, String name) {
            sb.append(kind).append(' ').append(name);
        }

        Line bytes(String key, byte[] value) {
            return raw(key, hex(value));
        }

        Line str(String key, String value) {
            return bytes(key, utf8(value));
        }

        Line num(String key, long value) {
            return raw(key, Long.toString(value));
        }

        private Line raw(String key, String value) {
            requireState(KEY.matcher(key).matches(), "bad key " + key);
            sb.append(' ').append(key).append('=').append(value);
            return this;
        }

        void end() {
            lines.set(slot, sb.toString());
        }
    }
}
