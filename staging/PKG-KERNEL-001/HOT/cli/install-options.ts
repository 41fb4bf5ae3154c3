/** The options `install` and `upgrade` share: both install an archive, and refuse the same way. */
export const INSTALL_OPTIONS = {
  dev: {
    type: 'boolean',
    default: false,
    describe: 'waive the signature check (recorded in the ledger and the receipt)',
  },
  id: { type: 'string', describe: 'refuse unless the archive is this package id' },
} as const;
