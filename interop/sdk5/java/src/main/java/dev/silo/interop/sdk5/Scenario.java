package dev.silo.interop.sdk5;

/** One scenario of the suite. */
interface Scenario {

    /** Runs it: differences go to {@code ctx.fail}; returns the details of the PASS line. */
    String run(Ctx ctx) throws Exception;
}
