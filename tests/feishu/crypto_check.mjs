// Cross-check of the Feishu callback crypto with the official Node SDK (@larksuiteoapi/node-sdk).
// Reads {key, encrypt, body, timestamp, nonce, signature, plaintext2} as JSON on stdin, and prints:
//   decrypted  — what the SDK's AESCipher makes of our `encrypt`;
//   valid      — whether the SDK's signature check accepts our signature for `body`;
//   encrypt2   — `plaintext2` encrypted the way Feishu does (random IV), for our decrypt;
//   body2, signature2 — a callback body carrying encrypt2 and the signature the SDK computes.
import { createRequire } from 'node:module';
import crypto from 'node:crypto';

const require = createRequire(import.meta.url);
const lark = require('@larksuiteoapi/node-sdk');

const input = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
const decrypted = new lark.AESCipher(input.key).decrypt(input.encrypt);

const dispatcher = new lark.EventDispatcher({ encryptKey: input.key, loggerLevel: lark.LoggerLevel.error });
const headers = {
  'x-lark-request-timestamp': input.timestamp,
  'x-lark-request-nonce': input.nonce,
  'x-lark-signature': input.signature,
};
// The SDK's adapters put headers on the prototype, so JSON.stringify(data) is the body alone.
const data = Object.assign(Object.create({ headers }), JSON.parse(input.body));
const valid = dispatcher.requestHandle.checkIsEventValidated(data);

const key = crypto.createHash('sha256').update(input.key).digest();
const iv = crypto.randomBytes(16);
const cipher = crypto.createCipheriv('aes-256-cbc', key, iv);
const encrypt2 = Buffer.concat([iv, cipher.update(input.plaintext2, 'utf8'), cipher.final()]).toString('base64');
if (new lark.AESCipher(input.key).decrypt(encrypt2) !== input.plaintext2) throw new Error('SDK cannot read encrypt2');
const body2 = JSON.stringify({ encrypt: encrypt2 });
const check2 = Object.assign(Object.create({ headers: { ...headers, 'x-lark-signature': '' } }), JSON.parse(body2));
const signature2 = crypto.createHash('sha256').update(input.timestamp + input.nonce + input.key + body2).digest('hex');
check2.headers['x-lark-signature'] = signature2;
if (!dispatcher.requestHandle.checkIsEventValidated(check2)) throw new Error('SDK rejects its own signature2');

process.stdout.write(JSON.stringify({ decrypted, valid, encrypt2, body2, signature2 }));
