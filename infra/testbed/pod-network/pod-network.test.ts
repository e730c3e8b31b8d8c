import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { run } from '../exec/run.ts';
import { cleanupNetworkLeftovers, setupPodNetwork } from './index.ts';

const PREFIX = 'twnet';

/** A TCP echo server inside a namespace; resolves once it listens. */
const serveIn = async (netns: string, port: number) => {
  const child = spawn('ip', [
    'netns',
    'exec',
    netns,
    process.execPath,
    '-e',
    `require('net').createServer(s=>s.end('pong')).listen(${port},'0.0.0.0',()=>console.log('up'))`,
  ]);
  await once(child.stdout, 'data');
  return child;
};
const fetchFrom = (netns: string | undefined, host: string, port: number) => {
  const code = `const s=require('net').connect(${port},'${host}');s.setTimeout(2000,()=>process.exit(2));s.on('data',d=>{process.stdout.write(d);process.exit(0)});s.on('error',()=>process.exit(1))`;
  return netns
    ? run('ip', ['netns', 'exec', netns, process.execPath, '-e', code])
    : run(process.execPath, ['-e', code]);
};

// Real kernel: needs root (the test bed always does).
describe('pod network', () => {
  it('connects pods to each other and to the host, guards forwarding, and leaves nothing behind', async () => {
    const forward = readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8');
    const net = await setupPodNetwork({ prefix: PREFIX });
    const servers = [];
    try {
      const a = await net.attachPod('a');
      const b = await net.attachPod('b');
      expect(a.ip).not.toBe(b.ip);
      expect(readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8').trim()).toBe('1');
      servers.push(await serveIn(a.name, 7000));
      expect(await fetchFrom(b.name, a.ip, 7000)).toBe('pong'); // pod → pod
      expect(await fetchFrom(undefined, a.ip, 7000)).toBe('pong'); // host → pod
      const forwardRules = await run('iptables', ['-S', 'FORWARD']);
      expect(forwardRules.split('\n')[1]).toContain(`TWNET-GUARD`);
      await net.detachPod('a');
      await net.detachPod('a'); // idempotent
    } finally {
      for (const s of servers) s.kill();
      await net.close();
    }
    expect(await run('ip', ['netns', 'list'])).not.toContain(PREFIX);
    expect(await run('ip', ['link', 'show'])).not.toContain(PREFIX);
    expect(await run('iptables-save', [])).not.toContain('TWNET');
    expect(readFileSync('/proc/sys/net/ipv4/ip_forward', 'utf8')).toBe(forward);
  });

  it("keeps the bridge's MAC address while pods come and go, so pods reach the host without a pause", async () => {
    const net = await setupPodNetwork({ prefix: PREFIX });
    const host = createServer((s) => s.end('pong'));
    try {
      host.listen(7001, net.hostIp);
      await once(host, 'listening');
      const bridgeMac = () => readFileSync(`/sys/class/net/${net.bridge}/address`, 'utf8').trim();
      const mac = bridgeMac();
      expect(readFileSync(`/sys/class/net/${net.bridge}/addr_assign_type`, 'utf8').trim()).toBe('3'); // set
      // Pods that will go, then one that stays and learns the host's MAC address (ARP).
      for (const id of ['c1', 'c2', 'c3', 'c4']) await net.attachPod(id);
      const stays = await net.attachPod('stays');
      expect(await fetchFrom(stays.name, net.hostIp, 7001)).toBe('pong');
      for (const id of ['c1', 'c2', 'c3', 'c4']) await net.detachPod(id);
      expect(bridgeMac()).toBe(mac);
      expect(await fetchFrom(stays.name, net.hostIp, 7001)).toBe('pong');
    } finally {
      host.close();
      await net.close();
    }
  });

  it('clears what a killed run left', async () => {
    await run('ip', ['netns', 'add', `${PREFIX}-stale`]);
    await run('ip', ['link', 'add', `${PREFIX}0`, 'type', 'bridge']);
    await cleanupNetworkLeftovers(PREFIX);
    expect(await run('ip', ['netns', 'list'])).not.toContain(PREFIX);
    expect(await run('ip', ['link', 'show'])).not.toContain(PREFIX);
  });
});
