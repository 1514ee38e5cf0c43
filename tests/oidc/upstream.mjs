// A real OpenID Connect provider (panva/node-oidc-provider, pinned in package-lock.json) for
// the authorization-server tests: `node provider.mjs PORT REDIRECT_URI CLIENT_ID CLIENT_SECRET`.
// Listens on 127.0.0.1:PORT, prints "listening http://127.0.0.1:PORT" when ready. People log
// in on its development pages (any login name, any password; the name becomes `sub`).
import Provider from 'oidc-provider';

const [port, redirectUri, clientId, clientSecret] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    response_types: ['code'],
    grant_types: ['authorization_code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  pkce: { required: () => true },
  cookies: { keys: ['test-only-cookie-key-0123456789'] },
  findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  features: { devInteractions: { enabled: true } },
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));

provider.listen(Number(port), '127.0.0.1', () => {
  console.log(`listening ${issuer}`);
});
