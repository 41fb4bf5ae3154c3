import { homedir } from 'node:os';
import { join } from 'node:path';
import { CpError, show } from '#kernel/errors.js';
import { READ_LIMITS, readTextBounded } from '#kernel/bounded-read.js';

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** Reads a file's text, or null when it does not exist (injected: tests never touch the home directory). */
export type ReadFile = (path: string) => string | null;

export const readFileIfAny: ReadFile = (path) => {
  try {
    return readTextBounded(path, { maxBytes: READ_LIMITS.key * 16, what: 'the AWS shared credentials file' });
  } catch (error) {
    if ((error as { details?: { errno?: string } })?.details?.errno === 'ENOENT') return null;
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
};

type Env = Readonly<Record<string, string | undefined>>;

/** An INI file's sections (`[name]` → key = value), comments and blank lines skipped. */
export function parseIni(text: string): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | null = null;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[([^\]]+)\]$/.exec(line);
    if (header !== null) {
      current = new Map();
      sections.set((header[1] as string).trim(), current);
      continue;
    }
    const eq = line.indexOf('=');
    if (current !== null && eq > 0) current.set(line.slice(0, eq).trim().toLowerCase(), line.slice(eq + 1).trim());
  }
  return sections;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function home(env: Env): string {
  return nonEmpty(env.HOME) ?? nonEmpty(env.USERPROFILE) ?? homedir();
}

/**
 * The credentials the AWS SDKs would find first without a credential process or IMDS: AWS_ACCESS_KEY_ID /
 * AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else the profile (`profile` option, $AWS_PROFILE, `default`) of the
 * shared credentials file ($AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials). Errors name where they looked, never
 * a value.
 */
export function resolveCredentials(
  providerId: string,
  env: Env,
  profile: string | undefined,
  read: ReadFile,
): AwsCredentials {
  const id = nonEmpty(env.AWS_ACCESS_KEY_ID);
  const secret = nonEmpty(env.AWS_SECRET_ACCESS_KEY);
  if (id !== undefined && secret !== undefined) {
    const token = nonEmpty(env.AWS_SESSION_TOKEN);
    return token === undefined
      ? { accessKeyId: id, secretAccessKey: secret }
      : { accessKeyId: id, secretAccessKey: secret, sessionToken: token };
  }
  const name = profile ?? nonEmpty(env.AWS_PROFILE) ?? 'default';
  const file = nonEmpty(env.AWS_SHARED_CREDENTIALS_FILE) ?? join(home(env), '.aws', 'credentials');
  const text = read(file);
  const section = text === null ? undefined : parseIni(text).get(name);
  const fileId = section?.get('aws_access_key_id');
  const fileSecret = section?.get('aws_secret_access_key');
  if (fileId === undefined || fileSecret === undefined || fileId === '' || fileSecret === '') {
    throw new CpError(
      'ERR_PROVIDER_CONFIG',
      `provider ${show(providerId)} has no AWS credentials: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are not set and profile ${show(name)} ${text === null ? `is not in ${show(file)} (no such file)` : `in ${show(file)} has no aws_access_key_id and aws_secret_access_key`}`,
      {
        hint: 'export AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), or AWS_PROFILE naming a profile of ~/.aws/credentials',
        details: { provider_id: providerId, profile: name },
      },
    );
  }
  const token = section?.get('aws_session_token');
  return token
    ? { accessKeyId: fileId, secretAccessKey: fileSecret, sessionToken: token }
    : { accessKeyId: fileId, secretAccessKey: fileSecret };
}

const REGION = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/;

/** The region: the `region` option, $AWS_REGION, $AWS_DEFAULT_REGION, else the profile's in ~/.aws/config. */
export function resolveRegion(
  providerId: string,
  env: Env,
  option: string | undefined,
  profile: string | undefined,
  read: ReadFile,
): string {
  let region = option ?? nonEmpty(env.AWS_REGION) ?? nonEmpty(env.AWS_DEFAULT_REGION);
  if (region === undefined) {
    const name = profile ?? nonEmpty(env.AWS_PROFILE) ?? 'default';
    const text = read(nonEmpty(env.AWS_CONFIG_FILE) ?? join(home(env), '.aws', 'config'));
    const sections = text === null ? null : parseIni(text);
    region = (sections?.get(name === 'default' ? 'default' : `profile ${name}`) ?? sections?.get(name))?.get('region');
  }
  if (region === undefined || !REGION.test(region)) {
    throw new CpError(
      'ERR_PROVIDER_CONFIG',
      `provider ${show(providerId)} has ${region === undefined ? 'no AWS region' : `an invalid AWS region ${show(region)}`}`,
      {
        hint: 'set options.region in the provider config, or export AWS_REGION (e.g. us-east-1)',
        details: { provider_id: providerId },
      },
    );
  }
  return region;
}
