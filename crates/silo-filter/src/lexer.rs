//! The selector lexer: turns the text into tokens one at a time, on demand, as the parser asks.
//!
//! Lazy on purpose: Apache's parser stops at the first token that cannot continue the
//! expression and never looks further, so text after that token is not even lexed (an
//! unterminated comment there is not an error). Every rule follows the token definitions of
//! Apache's grammar, longest match first:
//!
//! * whitespace is space, tab, LF, CR and FF; nothing else (no NBSP);
//! * `-- text` is a comment only when a line end follows; at the end of the input it is two
//!   minus signs (Apache's comment token needs the line end);
//! * `/* ... */` ends at the first `*/`; an unclosed one is an error;
//! * keywords are ASCII, case-insensitive; identifiers are `[A-Za-z_$][A-Za-z0-9_$]*` (no `.`,
//!   no `-`, no non-ASCII) and keep their case;
//! * a decimal is `0` or `[1-9][0-9]*` with an optional `l`/`L` (so `0L` is `0` then `L`, and
//!   `007` is `0`, `0`, `7`); a float is `d+.d*[exp]`, `.d+[exp]` or `d+exp`, with
//!   `exp = [eE][+-]?d+`;
//! * a string is `'...'` with `''` for a quote, and may span lines.

use crate::error::{ParseError, ParseErrorKind};

/// A token kind; literals and identifiers borrow their text from the selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    Contains,
    StartsWith,
    EndsWith,
    /// The digits and suffix as written.
    Decimal(&'a str),
    Float(&'a str),
    /// The text between the quotes, `''` not yet decoded.
    Str(&'a str),
    Ident(&'a str),
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    LParen,
    RParen,
    Comma,
    Plus,
    Minus,
    End,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Token<'a> {
    pub(crate) tok: Tok<'a>,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

const KEYWORDS: [(&str, Tok<'static>); 12] = [
    ("NOT", Tok::Not),
    ("AND", Tok::And),
    ("OR", Tok::Or),
    ("BETWEEN", Tok::Between),
    ("IN", Tok::In),
    ("TRUE", Tok::True),
    ("FALSE", Tok::False),
    ("NULL", Tok::Null),
    ("IS", Tok::Is),
    ("CONTAINS", Tok::Contains),
    ("STARTSWITH", Tok::StartsWith),
    ("ENDSWITH", Tok::EndsWith),
];

#[derive(Debug)]
pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

fn is_ident_part(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit()
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str) -> Self {
        Self { src, pos: 0 }
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.src.as_bytes().get(at).copied()
    }

    /// The text `start..end`; both are ASCII positions (or the ends), so always char boundaries.
    fn text(&self, start: usize, end: usize) -> &'a str {
        self.src.get(start..end).unwrap_or("")
    }

    fn error(&self, at: usize, kind: ParseErrorKind) -> ParseError {
        ParseError::new(self.src, at, kind)
    }

    /// Number of ASCII digits from `at`.
    fn digits(&self, at: usize) -> usize {
        self.src.as_bytes().get(at..).map_or(0, |rest| rest.iter().take_while(|b| b.is_ascii_digit()).count())
    }

    /// Length of an exponent `[eE][+-]?d+` at `at`, or 0 when there is none (a bare `e` is not
    /// one and is left for the next token).
    fn exponent(&self, at: usize) -> usize {
        if !matches!(self.byte(at), Some(b'e' | b'E')) {
            return 0;
        }
        let sign = usize::from(matches!(self.byte(at.saturating_add(1)), Some(b'+' | b'-')));
        let digits = self.digits(at.saturating_add(1).saturating_add(sign));
        if digits == 0 { 0 } else { 1usize.saturating_add(sign).saturating_add(digits) }
    }

    /// Length of the longest float literal at `at`, 0 if none.
    fn float_len(&self, at: usize) -> usize {
        let int = self.digits(at);
        let dot = at.saturating_add(int);
        if self.byte(dot) == Some(b'.') {
            let frac = self.digits(dot.saturating_add(1));
            if int == 0 && frac == 0 {
                return 0;
            }
            let mantissa = int.saturating_add(1).saturating_add(frac);
            return mantissa.saturating_add(self.exponent(at.saturating_add(mantissa)));
        }
        if int == 0 {
            return 0;
        }
        match self.exponent(dot) {
            0 => 0,
            exp => int.saturating_add(exp),
        }
    }

    /// Length of the decimal literal at `at`, 0 if none.
    fn decimal_len(&self, at: usize) -> usize {
        match self.byte(at) {
            Some(b'0') => 1,
            Some(b'1'..=b'9') => {
                let digits = self.digits(at);
                let suffix = usize::from(matches!(self.byte(at.saturating_add(digits)), Some(b'l' | b'L')));
                digits.saturating_add(suffix)
            }
            _ => 0,
        }
    }

    /// Skips whitespace and comments; fails on an unclosed block comment.
    fn skip_blanks(&mut self) -> Result<(), ParseError> {
        loop {
            match self.byte(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0c) => self.pos = self.pos.saturating_add(1),
                Some(b'-') if self.byte(self.pos.saturating_add(1)) == Some(b'-') => {
                    let body = self.pos.saturating_add(2);
                    let rest = self.src.as_bytes().get(body..).unwrap_or(&[]);
                    match rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
                        // The line end is part of the comment; a following LF is whitespace.
                        Some(eol) => self.pos = body.saturating_add(eol).saturating_add(1),
                        // No line end: not a comment, but two minus signs.
                        None => return Ok(()),
                    }
                }
                Some(b'/') if self.byte(self.pos.saturating_add(1)) == Some(b'*') => {
                    let body = self.pos.saturating_add(2);
                    let rest = self.src.get(body..).unwrap_or("");
                    match rest.find("*/") {
                        Some(close) => self.pos = body.saturating_add(close).saturating_add(2),
                        None => return Err(self.error(self.pos, ParseErrorKind::UnterminatedComment)),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    pub(crate) fn next_token(&mut self) -> Result<Token<'a>, ParseError> {
        self.skip_blanks()?;
        let start = self.pos;
        let Some(b) = self.byte(start) else {
            return Ok(Token { tok: Tok::End, start, end: start });
        };
        let (tok, len) = match b {
            b'=' => (Tok::Eq, 1),
            b'<' => match self.byte(start.saturating_add(1)) {
                Some(b'>') => (Tok::Ne, 2),
                Some(b'=') => (Tok::Le, 2),
                _ => (Tok::Lt, 1),
            },
            b'>' => match self.byte(start.saturating_add(1)) {
                Some(b'=') => (Tok::Ge, 2),
                _ => (Tok::Gt, 1),
            },
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b',' => (Tok::Comma, 1),
            b'+' => (Tok::Plus, 1),
            b'-' => (Tok::Minus, 1),
            b'\'' => {
                let mut at = start.saturating_add(1);
                loop {
                    match self.byte(at) {
                        None => return Err(self.error(start, ParseErrorKind::UnterminatedString)),
                        Some(b'\'') if self.byte(at.saturating_add(1)) == Some(b'\'') => at = at.saturating_add(2),
                        Some(b'\'') => break,
                        Some(_) => at = at.saturating_add(1),
                    }
                }
                let body = self.text(start.saturating_add(1), at);
                (Tok::Str(body), at.saturating_add(1).saturating_sub(start))
            }
            b'0'..=b'9' | b'.' => {
                let float = self.float_len(start);
                let decimal = self.decimal_len(start);
                if float > decimal {
                    (Tok::Float(self.text(start, start.saturating_add(float))), float)
                } else if decimal > 0 {
                    (Tok::Decimal(self.text(start, start.saturating_add(decimal))), decimal)
                } else {
                    return Err(self.error(start, ParseErrorKind::UnexpectedChar('.')));
                }
            }
            b if is_ident_start(b) => {
                let rest = self.src.as_bytes().get(start..).unwrap_or(&[]);
                let len = rest.iter().take_while(|b| is_ident_part(**b)).count();
                let word = self.text(start, start.saturating_add(len));
                let tok = KEYWORDS
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(word))
                    .map_or(Tok::Ident(word), |(_, tok)| *tok);
                (tok, len)
            }
            _ => {
                let c = self.src.get(start..).and_then(|s| s.chars().next()).unwrap_or('\u{fffd}');
                return Err(self.error(start, ParseErrorKind::UnexpectedChar(c)));
            }
        };
        let end = start.saturating_add(len);
        self.pos = end;
        Ok(Token { tok, start, end })
    }
}
