/** The geographic prefixes of cross-region inference profiles (`us.amazon.nova-pro-v1:0`). */
const GEOS = new Set(['us', 'us-gov', 'eu', 'apac', 'jp', 'au', 'ca', 'global']);

/** The vendor of a Bedrock model id (`vendor.model`, perhaps behind a cross-region prefix or in an ARN), or null. */
export function bedrockVendor(id: string): string | null {
  const parts = id.slice(id.lastIndexOf('/') + 1).split('.');
  if (parts.length < 2) return null;
  return (parts.length > 2 && GEOS.has(parts[0] as string) ? parts[1] : parts[0]) ?? null;
}
