package dev.silo.interop;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Random;

/**
 * Fixed inputs shared by the vector sections. Everything here is a pure function of its
 * arguments: the output file must be byte-identical across runs and machines.
 */
final class Fixtures {
    /** Broker-ish IPv4 address 10.0.0.7 and the default broker listen port. */
    static final byte[] IPV4_STORE = {10, 0, 0, 7};
    static final byte[] IPV4_CLIENT = {10, 0, 0, 5};
    /** 2001:db8::7 and 2001:db8::5 (documentation prefix). */
    static final byte[] IPV6_STORE = {0x20, 0x01, 0x0d, (byte) 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};
    static final byte[] IPV6_CLIENT = {0x20, 0x01, 0x0d, (byte) 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5};
    static final int BROKER_PORT = 10911;
    static final int CLIENT_PORT = 54321;

    /** A plausible wall-clock instant (2024-09-22T10:13:20Z) so timestamps look real but never move. */
    static final long T0 = 1_727_000_000_000L;

    private Fixtures() {
    }

    static InetSocketAddress socket(byte[] address, int port) {
        try {
            // getByAddress never does a lookup, so no resolver or network is involved.
            return new InetSocketAddress(InetAddress.getByAddress(address), port);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(e);
        }
    }

    /**
     * A client message id in the shape MessageClientIDSetter produces (ip, pid, class loader hash,
     * time, counter = 16 bytes, uppercase hex), but derived from {@code counter} only.
     */
    static String uniqKey(int counter) {
        return String.format("0A000005%04X1B2C3D4E05F5E100%04X", 12345, counter & 0xffff);
    }

    /** Deterministic, non-trivial body bytes (not all equal, not a multiple of the CRC table). */
    static byte[] pattern(int length, int seed) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = (byte) (i * 31 + seed * 7 + (i >> 8));
        }
        return b;
    }

    static byte[] seededRandom(long seed, int length) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        return b;
    }
}
