// Expected GPT-2 token ids from the reference encoder of the npm package gpt-3-encoder (OpenAI's
// encoder.py ported to JavaScript): prints {"source", "cases": [{"text", "ids", "texts"}]},
// where texts[i] is what the reference's decode([ids[i]]) gives for the token alone.
//   node scripts/gpt2_reference_cases.js PACKAGE_DIR > data/gpt2_tokenizer/cases.json
const path = require('path');
const pkgDir = path.resolve(process.argv[2]);
const { encode, decode } = require(pkgDir);
const version = require(path.join(pkgDir, 'package.json')).version;

const texts = [
  'Hello world',
  'The quick brown fox jumps over the lazy dog.',
  "don't",
  "I'll be there, won't you?",
  "He's here. They're gone, we've left, I'm fine, you'd see.",
  "'S upper-case 'S and 'T and 'LL",
  '2024 3.14 1,000',
  'Numbers: 1234567890 and 007',
  'café naïve résumé',
  'Ångström Œuvre straße',
  'combining e\u0301 vs é',
  'emoji 😀 and 👍🏽',
  'family 👨‍👩‍👧‍👦 ZWJ',
  'flag 🇫🇷 and ❤️',
  '我喜欢深度学习',
  '日本語のテキスト、カタカナ',
  '한국어 문장',
  'مرحبا بالعالم',
  'Привет, мир!',
  'Γειά σου Κόσμε',
  'multiple   spaces    here',
  'tabs\tand\t\ttabs',
  '  leading spaces',
  'trailing spaces   ',
  'line one\nline two',
  'paragraph\n\nnext',
  '\n\n\n',
  'windows\r\nline',
  'def f(x):\n    return {x: [1, 2]}\n',
  'int main() {\n\tprintf("hi\\n");\n}',
  '<|endoftext|>',
  'https://example.com/path?q=1&r=2',
  'email@example.com #hashtag @user',
  ' ',
  '',
  '!!!???...',
  'a',
  "'",
  '    ',
  'x  y',
  'mixed中文English123',
  'non-breaking\u00a0space and\u2003em space',
  'soft\u00adhyphen and zero\u200bwidth',
  '\u000bvertical tab',
  'superscript ² and ½ and Ⅻ',
  'pneumonoultramicroscopicsilicovolcanoconiosis',
];

const cases = texts.map(text => {
  const ids = encode(text);
  if (decode(ids) !== text) throw new Error('the reference does not round-trip ' + JSON.stringify(text));
  return { text, ids, texts: ids.map(id => decode([id])) };
});
const source = 'gpt-3-encoder@' + version + ' (npm), scripts/make_gpt2_tokenizer_cases.sh';
process.stdout.write(JSON.stringify({ source, cases }, null, 1) + '\n');
