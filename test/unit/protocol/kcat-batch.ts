/**
 * The batch kcat 1.7.1 sent for `-K : -H hk=hv` and message `key1:hello`, as stored by Apache
 * Kafka at offset 0 (kafka-protocol.md §4): golden bytes for the protocol tests.
 */
export const KCAT_BATCH = Buffer.from(
  '0000000000000000' + '00000047' + '00000000' + '02' + '9e1aa1d9' + '0000' + '00000000' +
    '000001a227557d55' + '000001a227557d55' + 'ffffffffffffffff' + 'ffff' + 'ffffffff' + '00000001' +
    '2a' + '00' + '00' + '00' + '08' + Buffer.from('key1').toString('hex') + '0a' + Buffer.from('hello').toString('hex') +
    '02' + '04' + Buffer.from('hk').toString('hex') + '04' + Buffer.from('hv').toString('hex'),
  'hex',
);

/** Its BaseTimestamp and MaxTimestamp. */
export const KCAT_TIMESTAMP = 0x01a227557d55;
