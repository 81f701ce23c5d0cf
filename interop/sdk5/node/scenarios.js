'use strict';
// The 5.x SDK interop scenarios for rocketmq-client-nodejs (see README.md beside this file).
// Started by run.sh, which installs the SDK and sets NODE_PATH; arguments as for run.sh.
// stdout carries only the PASS/FAIL/SKIP lines; SDK logging goes to files under SDK5_LOG_DIR.

const fs = require('node:fs');
const path = require('node:path');
const util = require('node:util');

const {
  Producer,
  SimpleConsumer,
  PushConsumer,
  ConsumeResult,
} = require('rocketmq-client-nodejs');
// Not re-exported by the package's index.
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const LANG = 'node';
const SCENARIOS = [ 'normal', 'fifo', 'delay', 'transaction', 'redeliver', 'push' ];

function usage(msg) {
  if (msg) process.stderr.write(`sdk5-node: ${msg}\n`);
  process.stderr.write('usage: run.sh --endpoint HOST:PORT --suffix S [--namesrv HOST:PORT] ' +
    '[--only "SCEN ..."] [--timeout SECONDS]\n');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { endpoint: '', suffix: '', only: SCENARIOS.slice(), timeout: 60 };
  for (let i = 0; i < argv.length; i++) {
    const key = argv[i];
    const value = argv[i + 1];
    if (![ '--endpoint', '--namesrv', '--suffix', '--only', '--timeout' ].includes(key)) {
      usage(`unknown argument ${key}`);
    }
    if (value === undefined) usage(`${key} needs a value`);
    i++;
    if (key === '--endpoint') opts.endpoint = value;
    else if (key === '--suffix') opts.suffix = value;
    else if (key === '--only') opts.only = value.split(/[\s,]+/).filter(Boolean);
    else if (key === '--timeout') {
      opts.timeout = Number(value);
      if (!Number.isFinite(opts.timeout) || opts.timeout <= 0) usage('--timeout must be a positive number');
    }
    // --namesrv is accepted for the common interface; this suite needs nothing but the proxy.
  }
  if (!opts.endpoint) usage('--endpoint is required');
  if (!opts.suffix) usage('--suffix is required');
  for (const s of opts.only) {
    if (!SCENARIOS.includes(s)) usage(`unknown scenario ${s}`);
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const S = opts.suffix;
const TIMEOUT_MS = opts.timeout * 1000;

// One log file per run; the SDK's own default logger (used by its consume services whatever
// logger the client is given) writes under $HOME, which run.sh points into the cache too.
const logDir = process.env.SDK5_LOG_DIR || path.join(process.cwd(), 'logs');
fs.mkdirSync(logDir, { recursive: true });
const logStream = fs.createWriteStream(path.join(logDir, `node-${S}.log`), { flags: 'a' });
function logLine(level, args) {
  logStream.write(`${new Date().toISOString()} ${level} ${util.format(...args)}\n`);
}
// No close(): the SDK closes its logger on shutdown, and this one is shared by every client.
const logger = {
  info: (...a) => logLine('INFO', a),
  warn: (...a) => logLine('WARN', a),
  error: (...a) => logLine('ERROR', a),
};
// Some SDK paths call debug() unconditionally (Transaction.commit), so it must exist.
logger.debug = process.env.SDK5_DEBUG ? (...a) => logLine('DEBUG', a) : () => {};
process.on('unhandledRejection', err => logLine('ERROR', [ 'unhandled rejection:', err ]));

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
const secs = ms => (ms / 1000).toFixed(1);
const firstLine = err => (err && err.message ? err.message.split('\n')[0] : String(err));
// The SDK wraps start-up failures twice; the innermost cause says what went wrong.
function errText(err) {
  let inner = err;
  while (inner && inner.cause) inner = inner.cause;
  return inner === err ? firstLine(err) : `${firstLine(err)}: ${firstLine(inner)}`;
}

class ScenarioFailure extends Error {}
function fail(msg) {
  throw new ScenarioFailure(msg);
}

function baseOptions() {
  return { endpoints: opts.endpoint, namespace: '', logger, requestTimeout: 5000, sslEnabled: false };
}

// Bounds a promise; used for start-up and shutdown, which have no timeout of their own.
function bounded(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${secs(ms)} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function startProducer(topic, checker) {
  const producer = new Producer({ ...baseOptions(), topic, checker });
  await bounded(producer.startup(), 20000, 'producer start-up');
  return producer;
}

async function startSimpleConsumer(group, topic, awaitMs) {
  const consumer = new SimpleConsumer({
    ...baseOptions(),
    consumerGroup: group,
    subscriptions: new Map([[ topic, '*' ]]),
    awaitDuration: awaitMs,
  });
  await bounded(consumer.startup(), 20000, 'simple consumer start-up');
  return consumer;
}

async function shutdownAll(...clients) {
  for (const client of clients) {
    if (!client) continue;
    // A push consumer's shutdown waits for its in-flight long polls (up to the 20 s the proxy
    // hands out); it is left to finish in the background rather than waited for.
    const limit = client instanceof PushConsumer ? 3000 : 30000;
    try {
      await bounded(client.shutdown(), limit, 'client shutdown');
    } catch (err) {
      logger.warn('shutdown failed: %s', err);
    }
  }
}

// A receive that reports errors instead of throwing, so that a loop can retry until its deadline.
async function receive(consumer, max, invisibleMs, errors) {
  try {
    return await consumer.receive(max, invisibleMs);
  } catch (err) {
    errors.push(errText(err));
    logger.warn('receive failed: %s', err);
    await sleep(500);
    return [];
  }
}

function parseBody(prefix, message) {
  // Bodies of this run are "<prefix>-<fields>-<suffix>"; anything else is not ours.
  const body = message.body.toString('utf8');
  const head = `${prefix}-`;
  const tail = `-${S}`;
  if (!body.startsWith(head) || !body.endsWith(tail)) return null;
  return body.slice(head.length, body.length - tail.length);
}

function lastErrors(errors) {
  return errors.length ? ` (receive errors: ${errors.slice(-3).join('; ')})` : '';
}

// 1. normal
async function normal() {
  const topic = `sdk5-${LANG}-normal-${S}`;
  const group = topic;
  const count = 20;
  let producer;
  let consumer;
  try {
    consumer = await startSimpleConsumer(group, topic, 5000);
    producer = await startProducer(topic);
    const receipts = [];
    for (let i = 0; i < count; i++) {
      const receipt = await producer.send({
        topic,
        tag: i % 2 === 1 ? 'TagB' : 'TagA',
        keys: [ `k-${i}` ],
        properties: new Map([[ 'idx', String(i) ]]),
        body: Buffer.from(`normal-${i}-${S}`),
      });
      receipts.push(receipt.messageId);
    }
    const seen = new Set();
    const problems = [];
    const errors = [];
    const deadline = Date.now() + TIMEOUT_MS;
    while (seen.size < count && Date.now() < deadline) {
      for (const m of await receive(consumer, 16, 20000, errors)) {
        const field = parseBody('normal', m);
        const i = field === null ? NaN : Number(field);
        if (!Number.isInteger(i) || i < 0 || i >= count) {
          await consumer.ack(m).catch(() => {});
          continue;
        }
        if (seen.has(i)) problems.push(`message ${i} delivered twice`);
        seen.add(i);
        const tag = i % 2 === 1 ? 'TagB' : 'TagA';
        if (m.tag !== tag) problems.push(`message ${i}: tag ${m.tag}, expected ${tag}`);
        if (m.keys.length !== 1 || m.keys[0] !== `k-${i}`) problems.push(`message ${i}: keys ${JSON.stringify(m.keys)}`);
        if (m.properties.get('idx') !== String(i)) problems.push(`message ${i}: property idx=${m.properties.get('idx')}`);
        if (m.messageId !== receipts[i]) problems.push(`message ${i}: id ${m.messageId}, send receipt said ${receipts[i]}`);
        if (m.deliveryAttempt !== 1) problems.push(`message ${i}: delivery attempt ${m.deliveryAttempt}`);
        try {
          await consumer.ack(m);
        } catch (err) {
          problems.push(`message ${i}: ack failed: ${errText(err)}`);
        }
      }
    }
    if (seen.size < count) {
      const missing = [];
      for (let i = 0; i < count; i++) if (!seen.has(i)) missing.push(i);
      problems.push(`not received within ${opts.timeout} s: ${missing.join(',')}${lastErrors(errors)}`);
    }
    if (problems.length) fail(problems.join('; '));
    // Everything was acked: a further long poll must bring nothing of ours.
    const t0 = Date.now();
    const extra = await consumer.receive(16, 20000);
    const ours = extra.filter(m => parseBody('normal', m) !== null);
    for (const m of extra) await consumer.ack(m).catch(() => {});
    if (ours.length) fail(`after acking all, received again: ${ours.map(m => m.body.toString()).join(',')}`);
    return `${count}/${count} received once with tag, keys, property, receipt id and attempt 1; ` +
      `acked; next receive empty after ${secs(Date.now() - t0)} s`;
  } finally {
    await shutdownAll(producer, consumer);
  }
}

// 2. fifo
async function fifo() {
  const topic = `sdk5-${LANG}-fifo-${S}`;
  const group = topic;
  const groups = 3;
  const perGroup = 10;
  let producer;
  let consumer;
  try {
    consumer = await startSimpleConsumer(group, topic, 5000);
    producer = await startProducer(topic);
    for (let j = 0; j < perGroup; j++) {
      for (let g = 0; g < groups; g++) {
        await producer.send({
          topic,
          messageGroup: `mg-${g}`,
          keys: [ `k-${g}-${j}` ],
          body: Buffer.from(`fifo-${g}-${j}-${S}`),
        });
      }
    }
    const next = new Array(groups).fill(0);
    const problems = [];
    const errors = [];
    let received = 0;
    const deadline = Date.now() + TIMEOUT_MS;
    while (received < groups * perGroup && Date.now() < deadline) {
      for (const m of await receive(consumer, 16, 20000, errors)) {
        const field = parseBody('fifo', m);
        const match = field && /^(\d+)-(\d+)$/.exec(field);
        if (!match) {
          await consumer.ack(m).catch(() => {});
          continue;
        }
        const g = Number(match[1]);
        const j = Number(match[2]);
        if (m.messageGroup !== `mg-${g}`) problems.push(`fifo-${g}-${j}: message group ${m.messageGroup}`);
        if (j < next[g]) {
          problems.push(`fifo-${g}-${j} delivered again (attempt ${m.deliveryAttempt})`);
        } else if (j > next[g]) {
          problems.push(`group mg-${g}: got ${j} while expecting ${next[g]}`);
          next[g] = j + 1;
          received++;
        } else {
          next[g]++;
          received++;
        }
        try {
          await consumer.ack(m);
        } catch (err) {
          problems.push(`fifo-${g}-${j}: ack failed: ${errText(err)}`);
        }
      }
    }
    if (received < groups * perGroup) {
      problems.push(`received ${received}/${groups * perGroup} within ${opts.timeout} s ` +
        `(next expected per group ${next.join(',')})${lastErrors(errors)}`);
    }
    if (problems.length) fail(problems.join('; '));
    return `${groups * perGroup}/${groups * perGroup} received once, in send order within each of ${groups} message groups`;
  } finally {
    await shutdownAll(producer, consumer);
  }
}

// 3. delay
async function delay() {
  const topic = `sdk5-${LANG}-delay-${S}`;
  const group = `sdk5-${LANG}-delay-${S}`;
  const count = 5;
  let producer;
  let consumer;
  try {
    consumer = await startSimpleConsumer(group, topic, 5000);
    producer = await startProducer(topic);
    const sent = [];
    for (let k = 0; k < count; k++) {
      const sentAt = Date.now();
      const deliverAt = sentAt + 3000;
      await producer.send({
        topic,
        deliveryTimestamp: new Date(deliverAt),
        keys: [ `k-${k}` ],
        body: Buffer.from(`delay-${k}-${S}`),
      });
      sent.push({ sentAt, deliverAt });
    }
    const got = new Map();
    const problems = [];
    const errors = [];
    const deadline = sent[count - 1].sentAt + 15000;
    while (got.size < count && Date.now() < deadline) {
      for (const m of await receive(consumer, 16, 20000, errors)) {
        const at = Date.now();
        const field = parseBody('delay', m);
        const k = field === null ? NaN : Number(field);
        await consumer.ack(m).catch(err => problems.push(`ack failed: ${errText(err)}`));
        if (!Number.isInteger(k) || k < 0 || k >= count) continue;
        if (got.has(k)) problems.push(`delay-${k} delivered twice`);
        got.set(k, at);
      }
    }
    const offsets = [];
    for (let k = 0; k < count; k++) {
      if (!got.has(k)) {
        problems.push(`delay-${k} not received within 15 s of sending${lastErrors(errors)}`);
        continue;
      }
      const early = sent[k].deliverAt - got.get(k);
      offsets.push(got.get(k) - sent[k].deliverAt);
      if (early > 1000) problems.push(`delay-${k} received ${secs(early)} s before its delivery time`);
      if (got.get(k) - sent[k].sentAt > 15000) problems.push(`delay-${k} received after more than 15 s`);
    }
    if (problems.length) fail(problems.join('; '));
    return `${count}/${count} received ${secs(Math.min(...offsets))} to ${secs(Math.max(...offsets))} s ` +
      'after their delivery time (now+3 s)';
  } finally {
    await shutdownAll(producer, consumer);
  }
}

// 4. transaction
async function transaction() {
  const topic = `sdk5-${LANG}-txn-${S}`;
  const group = `sdk5-${LANG}-transaction-${S}`;
  const checks = [];
  let committedC = false;
  const checker = {
    async check(view) {
      const which = parseBody('txn', view);
      const commit = which === 'C' && !committedC;
      checks.push({ which, at: Date.now(), commit });
      logger.info('transaction check for %s (message %s)', which, view.messageId);
      // C is committed on the first ask only. The broker may ask again about a transaction that
      // has already ended (seen with Apache 5.3.3: A and B after the client ended them, C again
      // 2 s after the checker's commit), and every further COMMIT writes the message once more.
      // So B stays rolled back, and A and a repeated C are answered "unknown".
      if (commit) {
        committedC = true;
        return TransactionResolution.COMMIT;
      }
      if (which === 'B') return TransactionResolution.ROLLBACK;
      return TransactionResolution.TRANSACTION_RESOLUTION_UNSPECIFIED;
    },
  };
  let producer;
  let consumer;
  try {
    consumer = await startSimpleConsumer(group, topic, 5000);
    producer = await startProducer(topic, checker);
    const send = async which => {
      const tx = producer.beginTransaction();
      const receipt = await producer.send({ topic, keys: [ `k-${which}` ], body: Buffer.from(`txn-${which}-${S}`) }, tx);
      return { tx, receipt };
    };
    const a = await send('A');
    await a.tx.commit();
    const b = await send('B');
    await b.tx.rollback();
    await send('C'); // left open: resolved by the server's check-back only
    const sentC = Date.now();
    const got = { A: 0, B: 0, C: 0 };
    const problems = [];
    const errors = [];
    let cAt = 0;
    let quietUntil = Infinity;
    const deadline = Date.now() + TIMEOUT_MS;
    while (Date.now() < Math.min(deadline, quietUntil)) {
      for (const m of await receive(consumer, 16, 20000, errors)) {
        const which = parseBody('txn', m);
        await consumer.ack(m).catch(err => problems.push(`ack failed: ${errText(err)}`));
        if (!(which in got)) continue;
        got[which]++;
        if (which === 'C' && !cAt) cAt = Date.now();
      }
      if (got.A && got.C && quietUntil === Infinity) quietUntil = Date.now() + 5000;
    }
    if (got.A !== 1) problems.push(`A received ${got.A} times`);
    if (got.C !== 1) problems.push(`C received ${got.C} times${got.C ? '' : ` within ${opts.timeout} s`}`);
    if (got.B !== 0) problems.push(`rolled-back B received ${got.B} times`);
    const cChecks = checks.filter(c => c.which === 'C');
    if (!cChecks.length) problems.push('the checker was never asked about C');
    if (problems.length) fail(problems.join('; ') + lastErrors(errors));
    const again = checks.filter(c => !c.commit).map(c => c.which);
    return `A and C received once, B never (watched 5 s past both); checker committed C ` +
      `${secs(cChecks[0].at - sentC)} s after sending` +
      (again.length ? `, asked again about ${again.join(',')} (B: rollback, others: unknown)` : '') +
      `; C delivered ${secs(cAt - sentC)} s after sending`;
  } finally {
    await shutdownAll(producer, consumer);
  }
}

// 5. redeliver
async function redeliver() {
  const topic = `sdk5-${LANG}-redeliver-${S}`;
  const group = topic;
  let producer;
  let consumer;
  try {
    consumer = await startSimpleConsumer(group, topic, 5000);
    producer = await startProducer(topic);
    const receipt = await producer.send({ topic, keys: [ 'k-0' ], body: Buffer.from(`redeliver-0-${S}`) });
    const errors = [];
    const ours = m => parseBody('redeliver', m) === '0';
    // Receives until a message of ours arrives (acking strangers), or the deadline passes.
    const receiveOurs = async (deadline, invisibleMs) => {
      while (Date.now() < deadline) {
        for (const m of await receive(consumer, 1, invisibleMs, errors)) {
          if (ours(m)) return { m, at: Date.now() };
          await consumer.ack(m).catch(() => {});
        }
      }
      return null;
    };
    const first = await receiveOurs(Date.now() + TIMEOUT_MS, 10000);
    if (!first) fail(`message not received within ${opts.timeout} s${lastErrors(errors)}`);
    if (first.m.messageId !== receipt.messageId) fail(`id ${first.m.messageId}, send receipt said ${receipt.messageId}`);
    if (first.m.deliveryAttempt !== 1) fail(`first delivery attempt ${first.m.deliveryAttempt}`);
    // Not acked: it must come back once its 10 s invisible time is over.
    const second = await receiveOurs(first.at + Math.max(TIMEOUT_MS, 30000), 10000);
    if (!second) fail(`not redelivered within ${secs(Math.max(TIMEOUT_MS, 30000))} s${lastErrors(errors)}`);
    const gap = second.at - first.at;
    if (gap < 8000) fail(`redelivered after ${secs(gap)} s, before the 10 s invisible time`);
    if (second.m.deliveryAttempt !== 2) fail(`redelivered with delivery attempt ${second.m.deliveryAttempt}`);
    if (second.m.messageId !== receipt.messageId) fail(`redelivered with id ${second.m.messageId}`);
    const handle = second.m.receiptHandle;
    try {
      // The SDK stores the handle the proxy returns in the message view.
      await consumer.changeInvisibleDuration(second.m, 10000);
    } catch (err) {
      fail(`change-invisible-duration failed: ${errText(err)}`);
    }
    const newHandle = second.m.receiptHandle;
    if (!newHandle || newHandle === handle) fail('change-invisible-duration returned no new receipt handle');
    try {
      await consumer.ack(second.m);
    } catch (err) {
      fail(`ack with the handle from change-invisible-duration failed: ${errText(err)}`);
    }
    const watchFrom = Date.now();
    const again = await receiveOurs(watchFrom + 13000, 10000);
    if (again) {
      await consumer.ack(again.m).catch(() => {});
      fail(`acked message came back after ${secs(again.at - watchFrom)} s (attempt ${again.m.deliveryAttempt})`);
    }
    return `redelivered after ${secs(gap)} s with attempt 2; change-invisible-duration gave a new handle, ` +
      `ack with it succeeded; not seen again for ${secs(Date.now() - watchFrom)} s`;
  } finally {
    await shutdownAll(producer, consumer);
  }
}

// 6. push
async function push() {
  const topic = `sdk5-${LANG}-push-${S}`;
  const group = topic;
  const dlqTopic = `%DLQ%${group}`;
  const DLQ_READER_GROUP = `sdk5-${LANG}-dlq-${S}`;
  const count = 10;
  const seen = new Map(); // idx -> [{attempt, at, result}]
  const listener = {
    consume(view) {
      const field = parseBody('push', view);
      const idx = field === null ? NaN : Number(field);
      if (!Number.isInteger(idx)) return ConsumeResult.SUCCESS;
      const attempt = view.deliveryAttempt;
      let result = ConsumeResult.SUCCESS;
      if (idx === 7 || (idx === 3 && attempt < 3)) result = ConsumeResult.FAILURE;
      if (!seen.has(idx)) seen.set(idx, []);
      seen.get(idx).push({ attempt, at: Date.now(), ok: result === ConsumeResult.SUCCESS });
      logger.info('push listener: message %d attempt %d -> %s', idx, attempt, result.name);
      return result;
    },
  };
  let producer;
  let pushConsumer;
  let dlqConsumer;
  try {
    pushConsumer = new PushConsumer({
      ...baseOptions(),
      consumerGroup: group,
      subscriptions: new Map([[ topic, '*' ]]),
      messageListener: listener,
    });
    await bounded(pushConsumer.startup(), 20000, 'push consumer start-up');
    producer = await startProducer(topic);
    const ids = [];
    for (let i = 0; i < count; i++) {
      const receipt = await producer.send({
        topic,
        keys: [ `k-${i}` ],
        properties: new Map([[ 'idx', String(i) ]]),
        body: Buffer.from(`push-${i}-${S}`),
      });
      ids.push(receipt.messageId);
    }
    const okCount = idx => (seen.get(idx) || []).filter(e => e.ok).length;
    const tries = idx => (seen.get(idx) || []).length;
    const done = () => {
      for (let i = 0; i < count; i++) if (i !== 7 && okCount(i) < 1) return false;
      return tries(3) >= 3 && tries(7) >= 3;
    };
    const deadline = Date.now() + TIMEOUT_MS;
    while (!done() && Date.now() < deadline) await sleep(200);
    const problems = [];
    if (!done()) {
      const state = [];
      for (let i = 0; i < count; i++) state.push(`${i}:${(seen.get(i) || []).map(e => e.attempt).join('/')}`);
      problems.push(`incomplete within ${opts.timeout} s, attempts seen ${state.join(' ')}`);
    }

    // Message 7 must now go to the DLQ rather than to the listener; read it from there. Not with
    // the push group: through the proxy, its max-attempts filter (3) applies to the DLQ copy too
    // (reconsume times 3), so the proxy forwards it to the DLQ again on every receive instead of
    // delivering it. The run's dlq group (default retry limit) reads it instead.
    let dlqMessage = null;
    let dlqNote = '';
    const dlqDeadline = Date.now() + TIMEOUT_MS;
    while (done() && !dlqMessage && Date.now() < dlqDeadline) {
      if (!dlqConsumer) {
        try {
          // The DLQ topic exists only once the first message was moved there.
          dlqConsumer = await startSimpleConsumer(DLQ_READER_GROUP, dlqTopic, 5000);
        } catch (err) {
          dlqNote = `DLQ consumer start-up: ${errText(err)}`;
          dlqConsumer = null;
          await sleep(1000);
          continue;
        }
      }
      try {
        for (const m of await dlqConsumer.receive(16, 20000)) {
          await dlqConsumer.ack(m).catch(() => {});
          if (parseBody('push', m) === '7') dlqMessage = m;
        }
      } catch (err) {
        dlqNote = `DLQ receive: ${errText(err)}`;
        await sleep(1000);
      }
    }
    if (done() && !dlqMessage) problems.push(`message 7 not readable from ${dlqTopic} within ${opts.timeout} s (${dlqNote || 'nothing received'})`);
    if (dlqMessage && dlqMessage.messageId !== ids[7]) {
      problems.push(`DLQ message id ${dlqMessage.messageId}, send receipt said ${ids[7]}`);
    }

    // The verdict on the listener's view, taken after the DLQ read (so a 4th try would show).
    for (let i = 0; i < count; i++) {
      const attempts = (seen.get(i) || []).map(e => e.attempt);
      if (i === 3) {
        if (attempts.join(',') !== '1,2,3' || okCount(3) !== 1) problems.push(`message 3 attempts ${attempts.join(',')}`);
      } else if (i === 7) {
        if (attempts.join(',') !== '1,2,3') problems.push(`message 7 attempts ${attempts.join(',')}`);
      } else if (attempts.join(',') !== '1' || okCount(i) !== 1) {
        problems.push(`message ${i} attempts ${attempts.join(',') || 'none'}`);
      }
    }
    if (problems.length) fail(problems.join('; '));
    const gaps = idx => {
      const e = seen.get(idx);
      return e.slice(1).map((x, k) => secs(x.at - e[k].at)).join(' s, ') + ' s';
    };
    return `all but 7 consumed once; 3 at attempts 1,2,3 (back-off ${gaps(3)}); 7 failed at attempts 1,2,3 ` +
      `(back-off ${gaps(7)}) then read from ${dlqTopic} (group ${DLQ_READER_GROUP}) with its original id, attempt ${dlqMessage.deliveryAttempt}`;
  } finally {
    await shutdownAll(dlqConsumer, producer, pushConsumer);
  }
}

const RUNNERS = { normal, fifo, delay, transaction, redeliver, push };

async function main() {
  const started = Date.now();
  // The scenarios use disjoint topics and groups, so they run side by side; each one's waits are
  // bounded by --timeout, and a watchdog bounds the whole run.
  const watchdogMs = TIMEOUT_MS * 2 + 60000;
  const results = new Map();
  const watchdog = setTimeout(() => {
    for (const name of opts.only) {
      if (!results.has(name)) console.log(`FAIL ${LANG} ${name}: still running after ${secs(watchdogMs)} s`);
    }
    process.exit(1);
  }, watchdogMs);
  await Promise.all(opts.only.map(async name => {
    const t0 = Date.now();
    let line;
    try {
      const detail = await RUNNERS[name]();
      line = `PASS ${LANG} ${name} ${detail} [${secs(Date.now() - t0)} s]`;
    } catch (err) {
      const what = err instanceof ScenarioFailure ? err.message : `error: ${errText(err)}`;
      logger.error('scenario %s failed: %s', name, err && err.stack ? err.stack : err);
      line = `FAIL ${LANG} ${name}: ${what}`;
    }
    results.set(name, line);
  }));
  clearTimeout(watchdog);
  let failed = 0;
  for (const name of opts.only) {
    const line = results.get(name);
    if (line.startsWith('FAIL')) failed++;
    console.log(line);
  }
  logger.info('suite finished in %s s, %d failed', secs(Date.now() - started), failed);
  // The SDK leaves timers and channels behind after shutdown; end the process explicitly.
  logStream.end(() => process.exit(failed ? 1 : 0));
}

main().catch(err => {
  console.log(`FAIL ${LANG} suite: ${errText(err)}`);
  process.exit(1);
});
