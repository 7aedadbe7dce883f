// The Node.js twin of the Go client tests' fault-injecting proxy (api/client/proxy_test.go):
// an HTTP proxy between the client and a real server that damages responses as a plan
// says. It cuts them after a byte offset (a reset connection, no terminal event), stalls
// them (holds the connection open and silent), rewrites their line ends, splits them
// into random pieces down to one byte, or corrupts the data of the n-th batch event.
// Real bytes from the real server; only the transport around them is damaged.
import { request, createServer } from 'node:http';

/** A fault that changes nothing. */
export const none = Object.freeze({ cutAfter: -1, stallAfter: -1, lineEnd: '', chunked: false, corruptBatch: 0 });

/** A seeded random source (mulberry32), so that a failing run can be repeated. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Starts a proxy to target (a base URL). plan(i, req, random) returns the fault of the
 * i-th request, numbered from 0. The log lists every request: path, Last-Event-ID,
 * status, and whether it was cut or stalled.
 */
export async function startProxy(t, target, plan, seed = 1) {
  const random = rng(seed);
  const log = [];
  let count = 0;
  const sockets = new Set();
  const upstreams = new Set();
  const srv = createServer((req, res) => {
    const fault = { ...none, ...plan(count++, req, random) };
    const entry = { path: req.url, lastEventId: req.headers['last-event-id'] ?? '', status: 0, cut: false, stalled: false };
    log.push(entry);
    const up = request(new URL(req.url, target), { method: req.method, headers: { ...req.headers, host: new URL(target).host } }, (upRes) => {
      entry.status = upRes.statusCode;
      const headers = { ...upRes.headers };
      delete headers['content-length'];
      res.writeHead(upRes.statusCode, headers);
      res.flushHeaders();
      let sent = 0;
      let batches = 0;
      let carry = '';
      const stop = (how) => {
        upRes.destroy();
        up.destroy();
        if (how === 'cut') {
          entry.cut = true;
          res.socket?.destroy();
        } else {
          entry.stalled = true;
        }
      };
      upRes.on('data', (buf) => {
        if (entry.cut || entry.stalled) return;
        let text = buf.toString('latin1');
        if (fault.corruptBatch > 0) {
          // Replaces the data of the corruptBatch-th batch event by base64 that is not Arrow.
          text = carry + text;
          const lastNL = text.lastIndexOf('\n');
          carry = text.slice(lastNL + 1);
          text = text.slice(0, lastNL + 1);
          text = text.replace(/(event: batch\n(?:id: [^\n]*\n)?data: )[^\n]*/g, (m, head) => (++batches === fault.corruptBatch ? `${head}bm90IGFycm93` : m));
        }
        if (fault.lineEnd) text = text.replace(/\n/g, fault.lineEnd);
        let out = Buffer.from(text, 'latin1');
        for (const [limit, how] of [[fault.cutAfter, 'cut'], [fault.stallAfter, 'stall']]) {
          if (limit >= 0 && sent + out.length > limit) {
            out = out.subarray(0, limit - sent);
            write(out);
            stop(how);
            return;
          }
        }
        write(out);
      });
      upRes.on('end', () => {
        if (!entry.cut && !entry.stalled) {
          if (carry) write(Buffer.from(fault.lineEnd ? carry.replace(/\n/g, fault.lineEnd) : carry, 'latin1'));
          res.end();
        }
      });
      upRes.on('error', () => res.destroy());
      function write(b) {
        sent += b.length;
        if (!fault.chunked) {
          res.write(b);
          return;
        }
        for (let i = 0; i < b.length; ) {
          const n = 1 + Math.floor(random() * Math.min(64, b.length - i));
          res.write(b.subarray(i, i + n));
          i += n;
        }
      }
    });
    upstreams.add(up);
    up.on('close', () => upstreams.delete(up));
    up.on('error', () => res.destroy());
    req.pipe(up);
    res.on('close', () => up.destroy());
  });
  srv.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const proxy = {
    url: `http://127.0.0.1:${srv.address().port}`,
    log,
    close() {
      for (const s of sockets) s.destroy();
      for (const u of upstreams) u.destroy();
      return new Promise((r) => srv.close(r));
    },
  };
  t.after(() => proxy.close());
  return proxy;
}
