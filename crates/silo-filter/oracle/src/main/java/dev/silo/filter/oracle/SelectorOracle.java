package dev.silo.filter.oracle;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.filter.expression.BooleanExpression;
import org.apache.rocketmq.filter.expression.EvaluationContext;
import org.apache.rocketmq.filter.parser.SelectorParser;

/**
 * Runs every selector case through Apache's SelectorParser and evaluates it the way the
 * broker's ExpressionMessageFilter does (a map of string properties; an exception is a failed
 * evaluation), then writes one line per case: the outcome, a tab, and the case line as read.
 *
 * <p>Case lines: the selector, then zero or more name=value fields, separated by tabs, with
 * backslash escapes (\t \n \r \f \\ and \\uXXXX). Blank lines and lines starting with # are
 * copied unchanged. Outcomes: parse-error, eval-error, true, false, null.
 */
public final class SelectorOracle {
    private SelectorOracle() {
    }

    static String unescape(String s) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c != '\\' || i + 1 >= s.length()) {
                out.append(c);
                continue;
            }
            char e = s.charAt(++i);
            switch (e) {
                case 't': out.append('\t'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 'f': out.append('\f'); break;
                case '\\': out.append('\\'); break;
                case 'u':
                    out.append((char) Integer.parseInt(s.substring(i + 1, i + 5), 16));
                    i += 4;
                    break;
                default: throw new IllegalArgumentException("bad escape \\" + e + " in " + s);
            }
        }
        return out.toString();
    }

    static String outcome(String selector, Map<String, String> properties) {
        BooleanExpression expression;
        try {
            expression = SelectorParser.parse(selector);
        } catch (Throwable t) {
            return "parse-error";
        }
        EvaluationContext context = new EvaluationContext() {
            @Override
            public Object get(String name) {
                return properties.get(name);
            }

            @Override
            public Map<String, Object> keyValues() {
                return new HashMap<>(properties);
            }
        };
        Object result;
        try {
            result = expression.evaluate(context);
        } catch (Throwable t) {
            return "eval-error";
        }
        if (result == null) {
            return "null";
        }
        if (result instanceof Boolean) {
            return ((Boolean) result) ? "true" : "false";
        }
        return "other:" + result.getClass().getSimpleName();
    }

    public static void main(String[] args) throws IOException {
        List<String> out = new ArrayList<>();
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            if (line.isBlank() || line.startsWith("#")) {
                out.add(line);
                continue;
            }
            String[] fields = line.split("\t", -1);
            Map<String, String> properties = new HashMap<>();
            for (int i = 1; i < fields.length; i++) {
                int eq = fields[i].indexOf('=');
                properties.put(unescape(fields[i].substring(0, eq)), unescape(fields[i].substring(eq + 1)));
            }
            out.add(outcome(unescape(fields[0]), properties) + "\t" + line);
        }
        Files.write(Path.of(args[1]), out, StandardCharsets.UTF_8);
    }
}
