package dev.silo.interop;

import java.nio.file.Path;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.store.MessageExtEncoder;

/**
 * Writes golden test vectors for Silo's Rust codecs, produced by the Apache RocketMQ reference
 * implementation itself (the unmodified jars from Maven Central).
 *
 * <p>Usage: {@code GoldenVectors OUTFILE}. The output is byte-identical across runs: no clocks,
 * no random ids, fixed hosts; see {@link Fixtures}.
 */
public final class GoldenVectors {
    private GoldenVectors() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: GoldenVectors OUTFILE");
            System.exit(2);
        }
        // Every real 5.3.3 peer does this at start-up (MQClientAPIImpl, BrokerStartup, NamesrvStartup).
        // Without it RemotingCommand leaves version at 0, which no real client or broker sends.
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, Integer.toString(MQVersion.CURRENT_VERSION));

        VectorFile f = new VectorFile();
        f.comment("Golden vectors written by the Apache RocketMQ reference implementation: rocketmq-common "
            + jarVersion(MQVersion.class) + ", rocketmq-remoting " + jarVersion(RemotingCommand.class)
            + ", rocketmq-store " + jarVersion(MessageExtEncoder.class) + " (Maven Central).");
        f.comment("Regenerate: bash interop/java/gen-vectors.sh crates/silo-wire/tests/vectors/java-5.3.3.txt");
        f.comment("Do not edit by hand.");
        f.comment("");
        f.comment("Format: one vector per line, `<kind> <name> key=value ...`. Values are lowercase hex of bytes (strings");
        f.comment("as UTF-8, empty = empty), except integer fields, which are decimal. Keys appear in a fixed order per kind.");
        f.comment("MQVersion.CURRENT_VERSION = " + MQVersion.CURRENT_VERSION + "; every frame below carries it as `version`"
            + " (RemotingCommand copies system property " + RemotingCommand.REMOTING_VERSION_KEY + ", which real peers set at");
        f.comment("start-up; without it RemotingCommand writes version 0). Properties strings from this version end with \\u0002.");
        f.blank();

        BatchVectors.write(f);
        RecordVectors.write(f);
        FrameVectors.write(f);
        ScalarVectors.write(f);

        f.writeTo(Path.of(args[0]));
    }

    /** Taken from the jar manifest, so the header cannot drift from the pom. */
    private static String jarVersion(Class<?> c) {
        String v = c.getPackage().getImplementationVersion();
        return v == null ? "(unknown version)" : v;
    }
}
