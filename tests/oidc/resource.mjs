// A real OpenID provider (npm oidc-provider, an OpenID-certified implementation) for the
// OAuth client tests: started on loopback by tests/client/auth/oidc_provider.py, it prints
// one JSON line ({"issuer": ...}) once it listens, and runs until stdin closes.
//
// argv: RESOURCE ACCESS_TOKEN_TTL_SECONDS SERVICE_CLIENT_SECRET
// - Dynamic Client Registration (RFC 7591), revocation (RFC 7009), client credentials;
// - resource indicators (RFC 8707): tokens for RESOURCE only, as RS256 JWTs (what the MCP
//   server verifies against this provider's JWKS), with the scopes notes:read, notes:write;
// - refresh tokens for every client allowed the refresh_token grant (rotated on use);
// - PKCE required; iss in authorization responses (RFC 9207); the built-in development
//   login and consent pages, which the tests fill in headlessly.
import http from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const [resource, ttlText, serviceSecret] = process.argv.slice(2);
const ttl = Number(ttlText || '300');
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const signing = { ...privateKey.export({ format: 'jwk' }), kid: 'fixture-key', alg: 'RS256', use: 'sig' };

let handler = (req, res) => { res.statusCode = 503; res.end(); };
const server = http.createServer((req, res) => handler(req, res));
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'service',
      client_secret: serviceSecret || 'service-secret-not-used',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    jwks: { keys: [signing] },
    scopes: ['openid', 'offline_access', 'notes:read', 'notes:write'],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => {
          if (indicator !== resource) throw new errors.InvalidTarget();
          return {
            scope: 'notes:read notes:write',
            audience: resource,
            accessTokenTTL: ttl,
            accessTokenFormat: 'jwt',
            jwt: { sign: { alg: 'RS256' } },
          };
        },
      },
    },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
  });
  provider.proxy = false;
  handler = provider.callback();
  process.stdout.write(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks` }) + '\n');
});
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
