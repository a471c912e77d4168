/**
 * The test's hands inside the test network: the test process cannot reach it (nothing links the
 * network to the machine), so it sends each API call here over IPC, `{ id, method, url, body?, headers? }`,
 * and gets `{ id, status, body }` back (the body parsed when it is JSON).
 */
process.on('message', async (message) => {
  const { id, method, url, body, headers } = message;
  try {
    const response = await fetch(url, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    let parsed = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: passed on as text.
    }
    process.send({ id, status: response.status, body: parsed });
  } catch (error) {
    process.send({ id, status: 0, body: String(error?.cause?.message ?? error?.message ?? error) });
  }
});
process.on('disconnect', () => process.exit(0));
process.send({ ready: true });
