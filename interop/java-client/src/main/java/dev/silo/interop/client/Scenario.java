package dev.silo.interop.client;

/** One client-interop scenario. */
interface Scenario {

    /**
     * Runs the scenario. Differences go to {@code ctx.fail}; the return value is the detail text of
     * the PASS line (used only when nothing differed).
     */
    String run(Ctx ctx) throws Exception;
}
