package dev.silo.interop.client;

import java.util.ArrayList;
import java.util.List;

/** What differed from what the scenario expected, in the order found. */
final class Failures {

    static final int SHOWN = 20;

    private final List<String> items = new ArrayList<>();

    synchronized void add(String what, Object expected, Object actual) {
        items.add(what + ": expected " + expected + ", actual " + actual);
    }

    synchronized void add(String what) {
        items.add(what);
    }

    /** Adds a difference when the two values are not equal; returns whether they were. */
    boolean check(String what, Object expected, Object actual) {
        boolean same = expected == null ? actual == null : expected.equals(actual);
        if (!same) {
            add(what, expected, actual);
        }
        return same;
    }

    synchronized boolean isEmpty() {
        return items.isEmpty();
    }

    synchronized int size() {
        return items.size();
    }

    synchronized List<String> first(int n) {
        return new ArrayList<>(items.subList(0, Math.min(n, items.size())));
    }
}
